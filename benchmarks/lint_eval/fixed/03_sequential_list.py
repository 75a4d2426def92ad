# Reduced from https://github.com/pytorch/pytorch/issues/4412
# Scenario 5; the default rule that should find it: DK005 (fixed twin: no finding expected)
import torch.nn as nn


class Network(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.convs = nn.ModuleList([
            nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.Conv2d(in_channels, in_channels, 3, padding=1)),
            nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.Conv2d(in_channels, in_channels, 3, padding=1)),
        ])

    def forward(self, x):
        output = self.convs[0](x)
        return self.convs[1](output)


net = Network(8)
net.cuda()
