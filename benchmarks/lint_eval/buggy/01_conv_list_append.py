# Reduced from https://github.com/pytorch/pytorch/issues/8017
# Scenario 5; the default rule that should find it: DK005 (buggy twin)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, layer_size):
        super(Model, self).__init__()
        self.conv = []
        for idx in range(layer_size):
            self.conv.append(nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=(3, 3)))
            in_channels = out_channels
            out_channels *= 2

    def forward(self, x):
        for conv in self.conv:
            x = conv(x)
        return x


model = Model(in_channels=1, out_channels=16, layer_size=3).to(torch.device("cuda"))
