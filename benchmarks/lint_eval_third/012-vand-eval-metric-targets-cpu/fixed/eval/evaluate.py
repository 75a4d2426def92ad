"""Evaluation script (reduced: the per-category metric loop)."""

import torch
from anomalib.data import ImageBatch, MVTecLOCO
from anomalib.metrics import F1Max
from submission_template.model import Model
from torch import nn


def compute_category_metrics(
    datamodule: MVTecLOCO,
    model: nn.Module,
    k_shot: int,
    seed: int,
    device: torch.device | None = None,
) -> dict[str, float]:
    """Compute category-wise metrics."""
    # Get the device
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")

    # Move the model to the device
    model.to(device)

    # Create the metrics
    image_metric, pixel_metric = (
        F1Max(fields=["pred_score", "gt_label"], prefix="image_"),
        F1Max(fields=["anomaly_map", "gt_mask"], prefix="pixel_", strict=False),
    )

    # Sample k_shot images from the training set.
    torch.manual_seed(seed)
    k_shot_idxs = torch.randperm(len(datamodule.train_data))[:k_shot].tolist()

    # pass few-shot images and dataset category to model
    setup_data = {
        "few_shot_samples": torch.stack(
            [datamodule.train_data[idx].image for idx in k_shot_idxs]
        ).to(device),
        "dataset_category": datamodule.category,
    }
    model.setup(setup_data)

    # Loop over the test set and compute the metrics
    for data in datamodule.test_dataloader():
        output = model(data.image.to(device))

        metric_batch = ImageBatch(
            image=data.image.to(device),
            pred_score=output.pred_score.to(device),
            anomaly_map=output.anomaly_map.to(device) if "anomaly_map" in output else None,
            gt_label=data.gt_label.to(device),
            gt_mask=data.gt_mask.to(device),
        )
        # Update the image metric
        image_metric.update(metric_batch)

        # Update the pixel metric
        if "anomaly_map" in output:
            pixel_metric.update(metric_batch)

    category_metrics = {"image_score": image_metric.compute().item()}
    if pixel_metric.update_called:
        category_metrics["pixel_score"] = pixel_metric.compute().item()

    return category_metrics


def evaluate_category(category: str, k_shot: int, seed: int) -> dict[str, float]:
    datamodule = MVTecLOCO(root="./datasets/MVTec_LOCO", category=category, eval_batch_size=1)
    datamodule.setup()
    model = Model()
    model.eval()
    return compute_category_metrics(datamodule, model, k_shot, seed)
