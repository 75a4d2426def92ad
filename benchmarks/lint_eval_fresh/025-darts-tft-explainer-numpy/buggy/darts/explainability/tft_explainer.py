from typing import List

import numpy as np
import pandas as pd
from torch import Tensor

from darts.explainability.explainability import _ForecastingModelExplainer
from darts.models import TFTModel


class TFTExplainer(_ForecastingModelExplainer):
    def __init__(self, model: TFTModel, background_series=None):
        super().__init__(model, background_series)

    def explain(self, foreground_series=None, horizons=None):
        preds = self.model.predict(n=self.n, series=foreground_series)
        # get the weights and the attention head from the trained model for the prediction
        # aggregate over attention heads
        attention_heads = (
            self.model.model._attn_out_weights.detach().numpy().sum(axis=-2)
        )
        encoder_importance = self._encoder_importance
        horizon_idx = [h - 1 for h in horizons]
        return [
            (np.take(attention_heads[idx], horizon_idx, axis=0).T, encoder_importance.iloc[idx : idx + 1])
            for idx, _ in enumerate(preds)
        ]

    @property
    def _encoder_importance(self) -> pd.DataFrame:
        """Returns the encoder variable importance of the TFT model."""
        return self._get_importance(
            weight=self.model.model._encoder_sparse_weights,
            names=self.model.model.encoder_variables,
        )

    def _get_importance(
        self,
        weight: Tensor,
        names: List[str],
        n_decimals=3,
    ) -> pd.DataFrame:
        """Returns the encoder or decoder variable of the TFT model."""
        if weight is None:
            return pd.DataFrame()

        # static covariates aggregation needs expansion in first dimension
        if weight.ndim == 3:
            weight = weight.unsqueeze(1)

        # transform the encoder/decoder weights to percentages, rounded to n_decimals
        weights_percentage = (
            weight.detach().numpy().mean(axis=1).squeeze(axis=1).round(n_decimals) * 100
        )
        importance = pd.DataFrame(weights_percentage, columns=names)
        return importance.transpose().sort_values(0, ascending=True).transpose()
