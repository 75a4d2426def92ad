import torch

from . import box_list
from .argmax_matcher import ArgMaxMatcher
from .box_list import BoxList
from .matcher import Match
from .region_similarity_calculator import IouSimilarity
from .box_coder import FasterRcnnBoxCoder


class TargetAssigner(object):
    """Target assigner to compute classification and regression targets."""

    def __init__(self, similarity_calc: IouSimilarity, matcher: ArgMaxMatcher, box_coder: FasterRcnnBoxCoder):
        self._similarity_calc = similarity_calc
        self._matcher = matcher
        self._box_coder = box_coder

    def assign(self, anchors: BoxList, groundtruth_boxes: BoxList):
        """Assign regression targets to each anchor."""
        match_quality_matrix = self._similarity_calc.compare(groundtruth_boxes, anchors)
        match = self._matcher.match(match_quality_matrix)
        reg_targets = self._create_regression_targets(anchors, groundtruth_boxes, match)
        return reg_targets, match

    def _create_regression_targets(self, anchors: BoxList, groundtruth_boxes: BoxList, match: Match):
        """Returns a regression target for each anchor."""
        device = anchors.device()
        zero_box = torch.zeros(4, device=device)
        matched_gt_boxes = match.gather_based_on_match(
            groundtruth_boxes.boxes(), unmatched_value=zero_box, ignored_value=zero_box)
        matched_gt_boxlist = box_list.BoxList(matched_gt_boxes)
        matched_reg_targets = self._box_coder.encode(matched_gt_boxlist, anchors)

        unmatched_ignored_reg_targets = torch.zeros(1, self._box_coder.code_size(), device=device).repeat(
            match.match_results.shape[0], 1)

        matched_anchors_mask = match.matched_column_indicator()
        reg_targets = torch.where(matched_anchors_mask.unsqueeze(1), matched_reg_targets, unmatched_ignored_reg_targets)
        return reg_targets
