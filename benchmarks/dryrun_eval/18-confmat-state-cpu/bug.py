"""Reduced from https://github.com/Lightning-AI/torchmetrics/issues/275 ("ConfusionMatrix does not work
on GPU").

The metric keeps its confmat state on the CPU because the metric object is never moved to the device;
update adds the batch's confusion matrix, computed from GPU predictions, to it.
"""

import torch
import torch.nn as nn


def _confusion_matrix_update(preds, target, num_classes):
    unique_mapping = (target.view(-1) * num_classes + preds.view(-1)).to(torch.long)
    bins = torch.bincount(unique_mapping, minlength=num_classes**2)
    return bins.reshape(num_classes, num_classes)


class ConfusionMatrix(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("confmat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def update(self, preds, target):
        confmat = _confusion_matrix_update(preds, target, self.num_classes)
        self.confmat += confmat

    def compute(self):
        return self.confmat


class IoU(ConfusionMatrix):
    def compute(self):
        intersection = torch.diag(self.confmat)
        union = self.confmat.sum(0) + self.confmat.sum(1) - intersection
        return (intersection.float() / union.clamp(min=1).float()).mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Conv2d(3, 4, 1).to(device)
    metric_iou = IoU(num_classes=4)
    for _ in range(2):
        images = torch.randn(2, 3, 8, 8).to(device)
        targets = torch.randint(0, 4, (2, 8, 8)).to(device)
        preds = model(images).argmax(dim=1)
        metric_iou.update(preds, targets)
    print("IoU", metric_iou.compute().item())
