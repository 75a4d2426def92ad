# Reduced from https://github.com/google-research/big_transfer/issues/73
# Scenario 13; the default rule that should find it: DK013 (buggy twin)
import torch

device = torch.device("cuda:1")
model = ResNetV2(head_size=10)
model = torch.nn.DataParallel(model)
model = model.to(device)
