"""The wrapper: moves the model and every batch to the chosen device."""

import torch

from .core import _Transformer


class Transformer:
    def __init__(self, n_steps, n_features, n_pred_steps, n_pred_features, device="cuda"):
        self.device = torch.device(device)
        self.model = _Transformer(
            n_steps, n_features, n_pred_steps, n_pred_features,
            n_layers=2, d_model=64, n_heads=4, d_ffn=128, dropout=0.1,
        )
        self.model = self.model.to(self.device)

    def _assemble_input_for_testing(self, data: list) -> dict:
        indices, X, missing_mask = (t.to(self.device) for t in data)
        return {"X": X, "missing_mask": missing_mask}

    def predict(self, test_loader) -> dict:
        self.model.eval()
        forecasting_collector = []
        with torch.no_grad():
            for data in test_loader:
                inputs = self._assemble_input_for_testing(data)
                results = self.model(inputs)
                forecasting_collector.append(results["forecasting_data"])
        forecasting = torch.cat(forecasting_collector).cpu().detach().numpy()
        return {"forecasting": forecasting}
