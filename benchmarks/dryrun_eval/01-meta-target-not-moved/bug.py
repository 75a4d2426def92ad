"""Reduced from https://github.com/JieyuZ2/wrench/issues/4 (MetaWeightNet.fit in wrench).

The meta batch's targets are never moved to the model's device; the helper cross_entropy_with_probs
hands them to F.cross_entropy together with the model's output.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def cross_entropy_with_probs(input, target, weight=None, reduction="mean"):
    return F.cross_entropy(input, target.long(), weight=weight, reduction=reduction)


class MetaWeightNet:
    def __init__(self, n_features, n_class, device):
        self.device = device
        self.model = nn.Linear(n_features, n_class).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, features, labels, meta_features, meta_labels, n_steps=3):
        meta_target = torch.as_tensor(meta_labels)
        for _ in range(n_steps):
            x = torch.as_tensor(features, device=self.device)
            y = torch.as_tensor(labels, device=self.device)
            loss = F.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            outputs = self.model(torch.as_tensor(meta_features, device=self.device))
            meta_loss = cross_entropy_with_probs(outputs, meta_target)
        return meta_loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = MetaWeightNet(8, 3, device)
    features, labels = torch.randn(16, 8), torch.randint(0, 3, (16,))
    meta_features, meta_labels = torch.randn(4, 8), torch.randint(0, 3, (4,))
    print("meta loss", net.fit(features, labels, meta_features, meta_labels))
