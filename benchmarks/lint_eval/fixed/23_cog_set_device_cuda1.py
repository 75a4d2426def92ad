# Reduced from https://github.com/replicate/cog/issues/971
# Scenario 13; the default rule that should find it: DK013 (fixed twin: no finding expected)
import torch

model = Predictor().to("cuda:0")
model = torch.nn.DataParallel(model)
