# Reduced from https://github.com/lanl/hippynn/pull/15
# Scenario 9; the default rule that should find it: DK009 (fixed twin: no finding expected)
import torch

model = Network()
model.to(torch.device("cuda"))
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
