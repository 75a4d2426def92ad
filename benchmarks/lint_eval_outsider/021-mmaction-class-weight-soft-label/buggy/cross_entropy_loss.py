import torch
import torch.nn as nn
import torch.nn.functional as F


class BaseWeightedLoss(nn.Module):
    """Base class for loss: forward calls _forward and scales by loss_weight."""

    def __init__(self, loss_weight=1.0):
        super().__init__()
        self.loss_weight = loss_weight

    def forward(self, *args, **kwargs):
        return self._forward(*args, **kwargs) * self.loss_weight


class CrossEntropyLoss(BaseWeightedLoss):
    """Cross Entropy Loss with hard labels or soft labels (a distribution over classes)."""

    def __init__(self, loss_weight=1.0, class_weight=None):
        super().__init__(loss_weight=loss_weight)
        self.class_weight = None
        if class_weight is not None:
            self.class_weight = torch.Tensor(class_weight)

    def _forward(self, cls_score, label, **kwargs):
        if cls_score.size() == label.size():
            # calculate loss for soft label
            assert cls_score.dim() == 2, "Only support 2-dim soft label"
            lsm = F.log_softmax(cls_score, 1)
            if self.class_weight is not None:
                lsm = lsm * self.class_weight.unsqueeze(0)
            loss_cls = -(label * lsm).sum(1)
            if self.class_weight is not None:
                # Use weighted average as pytorch CrossEntropyLoss does.
                loss_cls = loss_cls.sum() / torch.sum(self.class_weight.unsqueeze(0) * label)
            else:
                loss_cls = loss_cls.mean()
        else:
            # calculate loss for hard label
            if self.class_weight is not None:
                assert "weight" not in kwargs, "The key 'weight' already exists."
                kwargs["weight"] = self.class_weight.to(cls_score.device)
            loss_cls = F.cross_entropy(cls_score, label, **kwargs)
        return loss_cls
