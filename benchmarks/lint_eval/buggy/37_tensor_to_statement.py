# Reduced from https://github.com/pytorch/pytorch/issues/14068
# Scenario 2; the default rule that should find it: DK002 (buggy twin)
import torch

a = torch.zeros(3, 3)
a.to(torch.device("cuda:0"))
print(a.device)
