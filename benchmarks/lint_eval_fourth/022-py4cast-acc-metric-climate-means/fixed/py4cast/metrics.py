import warnings

import torch
from torchmetrics import Metric

from py4cast.datasets.base import DatasetInfo, NamedTensor


class MetricACC(Metric):
    """
    Compute the spatially averaged, per pred step Anomaly Correlation Coefficent between the target and the prediction
    """

    def __init__(self, dataset_info: DatasetInfo):
        super().__init__()
        warnings.warn("You are using ACC metric, which supposes access to climate normals.")
        names = (
            dataset_info.shortnames["input_output"]
            + dataset_info.shortnames["diagnostic"]
        )
        self.climate_means = dataset_info.stats.to_list("mean", names).to(self.device)

        self.add_state(
            "sum_acc",
            default=torch.tensor(0.0),
            dist_reduce_fx="sum",
        )
        self.add_state("step_count", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, preds: NamedTensor, target: NamedTensor):
        """
        compute the ACC between target and pred.
        prediction/target: (B, pred_steps, N_grid, d_f) or (B, pred_steps, W, H, d_f)
        """
        if self.step_count == 0 and self.climate_means.device != preds.tensor.device:
            self.climate_means = self.climate_means.to(preds.tensor.device)
        if self.step_count == 0:
            self.feature_names = preds.feature_names
            self.pred_steps = preds.tensor.shape[1]

        features = preds.tensor.shape[-1]
        spatial_dims = tuple(preds.spatial_dim_idx)
        if preds.tensor.shape != target.tensor.shape:
            raise ValueError("preds and target must have the same shape")

        num = (
            (preds.tensor - self.climate_means) * (target.tensor - self.climate_means)
        ).mean(dim=(spatial_dims))
        square_denom = ((preds.tensor - self.climate_means) ** 2).mean(
            dim=(spatial_dims)
        ) * ((target.tensor - self.climate_means) ** 2).mean(dim=(spatial_dims))
        res = torch.mean(num / torch.sqrt(square_denom), dim=0)

        if not self.sum_acc.ndim:
            self.sum_acc = torch.zeros(self.pred_steps, features, device=self.device)

        self.sum_acc += res.to(device=self.device)
        self.step_count += 1

    def compute(self) -> dict:
        mean_acc = self.sum_acc / self.step_count
        metric_log_dict = {
            f"val_acc/{name}_step{j}": mean_acc[j, i]
            for i, name in enumerate(self.feature_names)
            for j in range(self.pred_steps)
        }
        self.reset()
        return metric_log_dict
