"""Fixed twin of bug.py (https://github.com/yhenon/pytorch-retinanet/issues/174): the change the issue gives,
torch.tensor(0).float().cuda() in the CUDA branch.
"""

import torch
import torch.nn as nn


class FocalLoss(nn.Module):
    def forward(self, classifications, regressions, annotations):
        alpha, gamma = 0.25, 2.0
        classification_losses, regression_losses = [], []
        for j in range(classifications.shape[0]):
            classification = classifications[j, :, :].clamp(1e-4, 1.0 - 1e-4)
            regression = regressions[j, :, :]
            bbox_annotation = annotations[j, :, :]
            bbox_annotation = bbox_annotation[bbox_annotation[:, 4] != -1]
            if bbox_annotation.shape[0] == 0:
                if torch.cuda.is_available():
                    alpha_factor = torch.ones(classification.shape).cuda() * alpha
                    alpha_factor = 1.0 - alpha_factor
                    focal_weight = alpha_factor * torch.pow(classification, gamma)
                    bce = -(torch.log(1.0 - classification))
                    classification_losses.append((focal_weight * bce).sum())
                    regression_losses.append(torch.tensor(0).float().cuda())
                else:
                    alpha_factor = torch.ones(classification.shape) * alpha
                    alpha_factor = 1.0 - alpha_factor
                    focal_weight = alpha_factor * torch.pow(classification, gamma)
                    bce = -(torch.log(1.0 - classification))
                    classification_losses.append((focal_weight * bce).sum())
                    regression_losses.append(torch.tensor(0).float())
                continue
            targets = torch.zeros_like(classification)
            targets[:, bbox_annotation[0, 4].long()] = 1
            alpha_factor = torch.where(targets == 1.0, alpha, 1.0 - alpha)
            focal_weight = torch.where(targets == 1.0, 1.0 - classification, classification)
            focal_weight = alpha_factor * torch.pow(focal_weight, gamma)
            bce = -(targets * torch.log(classification) + (1.0 - targets) * torch.log(1.0 - classification))
            classification_losses.append((focal_weight * bce).sum() / bbox_annotation.shape[0])
            regression_losses.append((regression - bbox_annotation[0, :4]).abs().mean())
        classification_loss = torch.stack(classification_losses).mean(dim=0, keepdim=True)
        regression_loss = torch.stack(regression_losses).mean(dim=0, keepdim=True)
        return classification_loss, regression_loss


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    classifications = torch.rand(2, 9, 3, device=device)
    regressions = torch.randn(2, 9, 4, device=device)
    annotations = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 1.0]], [[-1.0, -1.0, -1.0, -1.0, -1.0]]], device=device)
    classification_loss, regression_loss = FocalLoss()(classifications, regressions, annotations)
    print(classification_loss.item(), regression_loss.item())
