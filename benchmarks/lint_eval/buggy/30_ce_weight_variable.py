# Reduced from https://github.com/pytorch/pytorch/issues/3879
# Scenario 7; the default rule that should find it: DK007 (buggy twin)
import torch
import torch.nn as nn

x = torch.randn(2, 2).cuda()
t = torch.LongTensor([0, 1]).cuda()
weight = torch.randn(2)
m = nn.CrossEntropyLoss(weight=weight)
loss = m(x, t)
