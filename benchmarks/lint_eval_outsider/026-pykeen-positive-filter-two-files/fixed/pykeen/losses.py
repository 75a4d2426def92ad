"""Loss functions for knowledge graph embedding models, reduced to the softmax-based one."""

from typing import Optional

import torch
from torch import nn


def prepare_negative_scores_for_softmax(
    batch_filter: Optional[torch.LongTensor],
    negative_scores: torch.FloatTensor,
) -> torch.FloatTensor:
    """Re-fill filtered negative scores as -inf to get a dense (batch_size, num_negatives) tensor."""
    if batch_filter is None:
        return negative_scores
    # negative_scores have already been filtered in the sampler!
    negative_scores_ = torch.zeros_like(batch_filter, dtype=negative_scores.dtype)
    negative_scores_[batch_filter] = negative_scores
    negative_scores_[~batch_filter] = float("-inf")
    return negative_scores_


class CrossEntropyLoss(nn.Module):
    def process_slcwa_scores(self, positive_scores, negative_scores, batch_filter=None):
        negative_scores = prepare_negative_scores_for_softmax(batch_filter, negative_scores)
        scores = torch.cat([positive_scores, negative_scores], dim=-1)
        return -torch.log_softmax(scores, dim=-1)[:, 0].mean()
