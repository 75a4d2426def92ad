"""Training KGE models based on the sLCWA."""

from typing import Optional

import torch

from ..losses import CrossEntropyLoss


class SLCWATrainingLoop:
    """A training loop that uses the stochastic local closed world assumption training approach."""

    def __init__(self, model, negative_sampler):
        self.model = model
        self.loss = CrossEntropyLoss()
        self.negative_sampler = negative_sampler

    @staticmethod
    def _process_batch_static(model, loss: CrossEntropyLoss, batch, start: Optional[int], stop: Optional[int]):
        # split batch
        positive_batch, negative_batch, positive_filter = batch

        # send to device
        positive_batch = positive_batch[start:stop].to(device=model.device)
        negative_batch = negative_batch[start:stop]
        if positive_filter is not None:
            positive_filter = positive_filter[start:stop]
            negative_batch = negative_batch[positive_filter]
        # Make it negative batch broadcastable (required for num_negs_per_pos > 1).
        negative_score_shape = negative_batch.shape[:-1]
        negative_batch = negative_batch.view(-1, 3)
        negative_batch = negative_batch.to(model.device)

        positive_scores = model.score_hrt(positive_batch)
        negative_scores = model.score_hrt(negative_batch).view(*negative_score_shape)
        return loss.process_slcwa_scores(
            positive_scores=positive_scores,
            negative_scores=negative_scores,
            batch_filter=positive_filter,
        )

    def train_batch(self, positive_batch: torch.LongTensor, start: int, stop: int):
        negative_batch, positive_filter = self.negative_sampler.sample(positive_batch)
        batch = (positive_batch, negative_batch, positive_filter)
        return self._process_batch_static(self.model, self.loss, batch, start, stop)
