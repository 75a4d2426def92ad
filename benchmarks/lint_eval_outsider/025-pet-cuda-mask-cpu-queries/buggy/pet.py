"""PET (point query transformer), reduced to the inference-time point-query generation."""

import torch
from torch import nn

from .utils import window_partition


class BasePETCount(nn.Module):
    def __init__(self, backbone, pq_stride=8):
        super().__init__()
        self.backbone = backbone
        self.pq_stride = pq_stride

    def points_queris_embed_inference(self, samples, stride=8, src=None, **kwargs):
        """Generate point query embedding during inference."""
        dense_input_embed = kwargs["dense_input_embed"]
        bs, c = dense_input_embed.shape[:2]

        input = samples.tensors
        image_shape = torch.tensor(input.shape[2:])
        shape = (image_shape + stride // 2 - 1) // stride

        # generate points queries
        shift_x = ((torch.arange(0, shape[1]) + 0.5) * stride).long()
        shift_y = ((torch.arange(0, shape[0]) + 0.5) * stride).long()
        shift_y, shift_x = torch.meshgrid(shift_y, shift_x)
        points_queries = torch.vstack([shift_y.flatten(), shift_x.flatten()]).permute(1, 0)  # 2xN --> Nx2
        h, w = shift_x.shape

        query_embed = dense_input_embed[:, :, points_queries[:, 0], points_queries[:, 1]]
        query_embed = query_embed.reshape(bs, c, h, w)
        points_queries = points_queries.reshape(h, w, 2).permute(2, 0, 1).unsqueeze(0)

        dec_win_w, dec_win_h = kwargs["dec_win_size"]
        query_embed_win = window_partition(query_embed, window_size_h=dec_win_h, window_size_w=dec_win_w)
        points_queries_win = window_partition(points_queries, window_size_h=dec_win_h, window_size_w=dec_win_w)

        # dynamic point query generation
        div = kwargs["div"]
        div_win = window_partition(div.unsqueeze(1), window_size_h=dec_win_h, window_size_w=dec_win_w)
        valid_div = (div_win > 0.5).sum(dim=0)[:, 0]
        v_idx = valid_div > 0
        query_embed_win = query_embed_win[:, v_idx]
        points_queries_win = points_queries_win[:, v_idx].reshape(-1, 2)
        return query_embed_win, points_queries_win, v_idx
