# Reduced from https://github.com/styalai/xLSTM-pytorch/issues/2
# Scenario 4; the default rule that should find it: DK004 (buggy twin)
import torch
import torch.nn as nn


class sLSTMblock(nn.Module):
    def __init__(self, x_example, depth):
        super().__init__()
        self.input_size = x_example.shape[2]
        self.nt_1 = torch.zeros(1, 1, x_example.shape[2], device=x_example.device)
        self.ct_1 = torch.zeros(1, 1, x_example.shape[2], device=x_example.device)
        self.ht_1 = torch.zeros(1, 1, x_example.shape[2], device=x_example.device)
        self.mt_1 = torch.zeros(1, 1, x_example.shape[2], device=x_example.device)
        self.proj = nn.Linear(self.input_size, self.input_size)

    def forward(self, x):
        return self.proj(x) + self.ct_1
