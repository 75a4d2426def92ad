# Reduced from https://github.com/lanl/hippynn/pull/15
# Scenario 9; the default rule that should find it: DK009 (buggy twin)
import torch

model = Network()
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
model.to(torch.device("cuda"))
