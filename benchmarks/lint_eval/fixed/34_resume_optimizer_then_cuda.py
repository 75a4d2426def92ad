# Reduced from https://github.com/pytorch/pytorch/issues/2830
# Scenario 9; the default rule that should find it: DK009 (fixed twin: no finding expected)
import torch

model = Model()
optimizer = torch.optim.Adam(model.parameters())
checkpoint = torch.load("checkpoint.pth", map_location="cpu")
model.load_state_dict(checkpoint["model"])
model.cuda()
optimizer.load_state_dict(checkpoint["optimizer"])
