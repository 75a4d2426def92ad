# Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/2623
# Scenario 5; the default rule that should find it: DK005 (buggy twin)
import math

import torch.nn as nn


class Conv1DClassifier(nn.Module):
    def __init__(self, num_classes):
        super(Conv1DClassifier, self).__init__()
        n_layers = int(math.log2(256))
        self.conv_layers = []
        for layer_idx in range(n_layers):
            self.conv_layers.append(
                nn.Conv1d(in_channels=2 ** layer_idx, out_channels=2 ** (layer_idx + 1), kernel_size=64, stride=64)
            )
        self.fc1 = nn.Linear(256, num_classes)

    def forward(self, x):
        for conv_layer in self.conv_layers:
            x = conv_layer(x)
        return self.fc1(x.flatten(1))
