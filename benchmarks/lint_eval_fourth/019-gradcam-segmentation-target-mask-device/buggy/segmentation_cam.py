import numpy as np
import torch
from torchvision.models.segmentation import deeplabv3_resnet50

from pytorch_grad_cam import GradCAM
from pytorch_grad_cam.utils.model_targets import SemanticSegmentationTarget


def explain(input_tensor, car_category=7):
    model = deeplabv3_resnet50(pretrained=True).eval()
    output = model(input_tensor)["out"]
    car_mask = output[0].argmax(axis=0).detach().cpu().numpy()
    car_mask_float = np.float32(car_mask == car_category)
    targets = [SemanticSegmentationTarget(car_category, car_mask_float)]
    with GradCAM(model=model, target_layers=[model.backbone.layer4]) as cam:
        return cam(input_tensor=input_tensor, targets=targets)[0, :]
