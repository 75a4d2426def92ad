# Reduced from https://github.com/JDAI-CV/FaceX-Zoo/issues/68
# Scenario 13; the default rule that should find it: DK013 (buggy twin)
import torch


class FaceModel(torch.nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone

    def forward(self, x):
        return self.backbone(x)


model = FaceModel(backbone)
model = torch.nn.DataParallel(model)
features = model(images)
