import torch
from torch import nn

from texar.core.layers import MergeLayer


class ConvClassifier(nn.Module):
    def __init__(self, in_channels=100, filters=128, kernel_sizes=(3, 4, 5), num_classes=2):
        super().__init__()
        convs = [nn.Conv1d(in_channels, filters, k, padding=k // 2) for k in kernel_sizes]
        self.merge = MergeLayer(convs, mode='concat', dim=1)
        self.out = nn.Linear(filters * len(kernel_sizes), num_classes)

    def forward(self, embedded):
        merged = self.merge(embedded)
        return self.out(merged.max(dim=2).values)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = ConvClassifier().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
inputs = torch.randn(8, 100, 40, device=device)
logits = model(inputs)
