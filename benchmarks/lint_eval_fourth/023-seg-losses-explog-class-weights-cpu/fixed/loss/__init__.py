import torch
import torch.nn as nn
import torch.nn.functional as F


def soft_dice_loss(output, target, epsilon=1e-6):
    numerator = 2. * torch.sum(output * target, dim=(-2, -1))
    denominator = torch.sum(output + target, dim=(-2, -1))
    return (numerator + epsilon) / (denominator + epsilon)


class ExponentialLogarithmicLoss(nn.Module):
    """
    This loss is focuses on less accurately predicted structures using the combination of Dice Loss ans Cross Entropy
    Loss
    """

    def __init__(self, w_dice=0.5, w_cross=0.5, gamma=0.3, use_softmax=True, class_weights=None):
        super(ExponentialLogarithmicLoss, self).__init__()
        self.w_dice = w_dice
        self.gamma = gamma
        self.w_cross = w_cross
        self.use_softmax = use_softmax
        self.class_weights = class_weights

    def forward(self, output, target, epsilon=1e-6):
        num_classes = output.shape[1]
        assert len(self.class_weights) == num_classes, "Class weight must be not None and must be a Tensor of size C - Number of classes"

        self.class_weights = self.class_weights.to(target.device)
        weight_map = self.class_weights[target]

        target = F.one_hot(target.to(torch.int64), num_classes=num_classes).permute((0, 3, 1, 2)).to(torch.float)
        if self.use_softmax:
            output = F.softmax(output, dim=1)

        l_dice = torch.mean(torch.pow(-torch.log(soft_dice_loss(output, target)), self.gamma))
        l_cross = torch.mean(torch.mul(weight_map, torch.pow(F.cross_entropy(output, target, reduction='none'), self.gamma)))
        return self.w_dice * l_dice + self.w_cross * l_cross
