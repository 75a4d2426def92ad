# Reduced from https://github.com/styalai/xLSTM-pytorch/issues/2
# Scenario 4; the default rule that should find it: DK004 (fixed twin: no finding expected)
import torch
import torch.nn as nn


class sLSTMblock(nn.Module):
    def __init__(self, x_example, depth):
        super().__init__()
        self.input_size = x_example.shape[2]
        self.register_buffer("nt_1", torch.zeros(1, 1, x_example.shape[2], device=x_example.device))
        self.register_buffer("ct_1", torch.zeros(1, 1, x_example.shape[2], device=x_example.device))
        self.register_buffer("ht_1", torch.zeros(1, 1, x_example.shape[2], device=x_example.device))
        self.register_buffer("mt_1", torch.zeros(1, 1, x_example.shape[2], device=x_example.device))
        self.proj = nn.Linear(self.input_size, self.input_size)

    def forward(self, x):
        return self.proj(x) + self.ct_1
