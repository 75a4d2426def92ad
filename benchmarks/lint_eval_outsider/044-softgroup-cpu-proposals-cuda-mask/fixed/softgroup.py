import torch
import torch.nn as nn

from ..ops import ball_query, bfs_cluster


class SoftGroup(nn.Module):
    def forward_grouping(self, semantic_scores, pt_offsets, batch_idxs, coords_float):
        proposals_idx_list = []
        proposals_offset_list = []
        semantic_scores = semantic_scores.softmax(dim=-1)
        class_numpoint_mean = torch.tensor(self.grouping_cfg.class_numpoint_mean, dtype=torch.float32)
        for class_id in range(self.semantic_classes):
            scores = semantic_scores[:, class_id].contiguous()
            object_idxs = (scores > self.grouping_cfg.score_thr).nonzero().view(-1)
            batch_idxs_ = batch_idxs[object_idxs]
            coords_ = coords_float[object_idxs]
            pt_offsets_ = pt_offsets[object_idxs]
            batch_offsets_ = self.get_batch_offsets(batch_idxs_)
            neighbor_inds, start_len = ball_query(coords_ + pt_offsets_, batch_idxs_, batch_offsets_)
            proposals_idx, proposals_offset = bfs_cluster(
                class_numpoint_mean, neighbor_inds.cpu(), start_len.cpu(), self.grouping_cfg.npoint_thr, class_id
            )
            proposals_idx[:, 1] = object_idxs[proposals_idx[:, 1].long()].int()
            if proposals_idx.size(0) > 0:
                proposals_idx_list.append(proposals_idx)
                proposals_offset_list.append(proposals_offset)
        if len(proposals_idx_list) > 0:
            proposals_idx = torch.cat(proposals_idx_list, dim=0)
            proposals_offset = torch.cat(proposals_offset_list)
        else:
            proposals_idx = torch.zeros((0, 2), dtype=torch.int32)
            proposals_offset = torch.zeros((0,), dtype=torch.int32)
        return proposals_idx, proposals_offset

    def get_instances(self, scan_id, proposals_idx, semantic_scores, cls_scores, iou_scores, mask_scores):
        if proposals_idx.size(0) == 0:
            return []
        num_instances = cls_scores.size(0)
        num_points = semantic_scores.size(0)
        cls_scores = cls_scores.softmax(1)
        mask_pred_list = []
        for i in range(self.instance_classes):
            cur_cls_scores = cls_scores[:, i]
            cur_mask_scores = mask_scores[:, i]
            mask_pred = torch.zeros((num_instances, num_points), dtype=torch.int, device="cuda")
            mask_inds = cur_mask_scores > self.test_cfg.mask_score_thr
            proposals_idx = proposals_idx.to(mask_inds.device)
            cur_proposals_idx = proposals_idx[mask_inds].long()
            mask_pred[cur_proposals_idx[:, 0], cur_proposals_idx[:, 1]] = 1
            inds = cur_cls_scores > self.test_cfg.cls_score_thr
            mask_pred_list.append(mask_pred[inds].cpu())
        return torch.cat(mask_pred_list).numpy()

    def forward_test(self, batch):
        semantic_scores, pt_offsets, cls_scores, iou_scores, mask_scores = self.forward_backbone(batch)
        proposals_idx, _ = self.forward_grouping(semantic_scores, pt_offsets, batch["batch_idxs"], batch["coords"])
        return self.get_instances(batch["scan_ids"][0], proposals_idx, semantic_scores, cls_scores, iou_scores, mask_scores)
