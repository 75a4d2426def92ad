"""Argmax matcher implementation."""
import torch
from .matcher import Match
from typing import Optional


def one_hot_bool(x, num_classes: int):
    # for improved perf over PyTorch builtin one_hot, scatter to bool
    onehot = torch.zeros(x.size(0), num_classes, device=x.device, dtype=torch.bool)
    return onehot.scatter_(1, x.unsqueeze(1), 1)


@torch.jit.script
class ArgMaxMatcher(object):  # cannot inherit with torchscript
    """Matcher based on highest value."""

    def __init__(self,
                 matched_threshold: float,
                 unmatched_threshold: Optional[float] = None,
                 negatives_lower_than_unmatched: bool = True,
                 force_match_for_each_row: bool = False):
        self._matched_threshold = matched_threshold
        self._unmatched_threshold: float = 0.
        if unmatched_threshold is None:
            self._unmatched_threshold = matched_threshold
        else:
            self._unmatched_threshold = unmatched_threshold
        self._force_match_for_each_row = force_match_for_each_row
        self._negatives_lower_than_unmatched = negatives_lower_than_unmatched

    def _match_when_rows_are_empty(self, similarity_matrix):
        """Performs matching when the rows of similarity matrix are empty.

        When the rows are empty, all detections are false positives. So we return
        a tensor of -1's to indicate that the columns do not match to any rows.
        """
        return -1 * torch.ones(similarity_matrix.shape[1], dtype=torch.long)

    def _match_when_rows_are_non_empty(self, similarity_matrix):
        """Performs matching when the rows of similarity matrix are non empty."""
        # Matches for each column
        matched_vals, matches = torch.max(similarity_matrix, 0)

        # Deal with matched and unmatched threshold
        if self._matched_threshold is not None:
            below_unmatched_threshold = self._unmatched_threshold > matched_vals
            between_thresholds = (matched_vals >= self._unmatched_threshold) & \
                                 (self._matched_threshold > matched_vals)
            if self._negatives_lower_than_unmatched:
                matches = self._set_values_using_indicator(matches, below_unmatched_threshold, -1)
                matches = self._set_values_using_indicator(matches, between_thresholds, -2)
            else:
                matches = self._set_values_using_indicator(matches, below_unmatched_threshold, -2)
                matches = self._set_values_using_indicator(matches, between_thresholds, -1)

        if self._force_match_for_each_row:
            force_match_column_ids = torch.argmax(similarity_matrix, 1)
            force_match_column_indicators = one_hot_bool(force_match_column_ids, similarity_matrix.shape[1])
            force_match_column_mask, force_match_row_ids = torch.max(force_match_column_indicators, 0)
            final_matches = torch.where(force_match_column_mask, force_match_row_ids, matches)
            return final_matches
        else:
            return matches

    def match(self, similarity_matrix):
        """Tries to match each column of the similarity matrix to a row."""
        if similarity_matrix.shape[0] == 0:
            return Match(self._match_when_rows_are_empty(similarity_matrix))
        else:
            return Match(self._match_when_rows_are_non_empty(similarity_matrix))

    def _set_values_using_indicator(self, x, indicator, val: int):
        """Set the indicated fields of x to val."""
        indicator = indicator.to(dtype=x.dtype)
        return x * (1 - indicator) + val * indicator
