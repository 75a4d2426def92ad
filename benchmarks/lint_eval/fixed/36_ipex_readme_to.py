# Reduced from https://github.com/intel/intel-extension-for-pytorch/pull/267
# Scenario 2; the default rule that should find it: DK002 (fixed twin: no finding expected)
import torch
import torchvision.models as models

model = models.resnet50(pretrained=True)
model.eval()
data = torch.rand(1, 3, 224, 224)
model = model.to("xpu")
data = data.to("xpu")
with torch.no_grad():
    model(data)
