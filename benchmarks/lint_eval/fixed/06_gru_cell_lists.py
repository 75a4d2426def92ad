# Reduced from https://github.com/pytorch/pytorch/issues/21905
# Scenario 5; the default rule that should find it: DK005 (fixed twin: no finding expected)
import torch.nn as nn


class GRUStack(nn.Module):
    def __init__(self, input_size, hidden_size, layn):
        super().__init__()
        self.x2h = nn.ModuleList()
        self.h2h = nn.ModuleList()
        for x in range(layn):
            temp1 = nn.Linear(input_size, 3 * hidden_size)
            temp2 = nn.Linear(hidden_size, 3 * hidden_size)
            self.x2h.append(temp1)
            self.h2h.append(temp2)
