import os

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.transforms as tr
from PIL import Image

from models.unet import UNet


def build_preds(input_im, tg_size):
    img = tr.ToTensor()(resize(input_im)).view(1, 3, *tg_size).to(device)
    with torch.no_grad():
        logits = model(img)
        probas = F.softmax(logits, dim=1)
    probas_np = probas[0].detach().cpu().numpy()
    return 1 - probas_np[0], np.stack([probas_np[1], probas_np[2], probas_np[3]], axis=2)


if __name__ == "__main__":
    path_to_check_point = "models/checkpoints_uncertainty/model_final.pth.tar"
    num_classes = 4
    model = UNet(num_classes)
    checkpoint = torch.load(path_to_check_point, map_location=torch.device("cpu"))
    model.load_state_dict(checkpoint["state_dict"])
    print("=> loaded checkpoint '{}' (epoch {})".format(path_to_check_point, checkpoint["epoch"]))
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model.to(device)
    model.eval()

    tg_size = (512, 512)
    resize = tr.Resize(tg_size)
    for im_name in os.listdir("retinal_images"):
        input_im = Image.open(os.path.join("retinal_images", im_name))
        pred_vessels, pred_rgb = build_preds(input_im, tg_size)
