import argparse
import json
import os

import torch
import torchvision.transforms as transforms
from PIL import Image
from torchvision.utils import save_image

from models import CompletionNetwork
from utils import gen_input_mask, poisson_blend

parser = argparse.ArgumentParser()
parser.add_argument('model')
parser.add_argument('config')
parser.add_argument('input_img')
parser.add_argument('output_img')
parser.add_argument('--img_size', type=int, default=160)


def main(args):
    args.model = os.path.expanduser(args.model)
    args.config = os.path.expanduser(args.config)

    # Load model
    with open(args.config, 'r') as f:
        config = json.load(f)
    mpv = torch.tensor(config['mpv']).view(1,3,1,1)
    model = CompletionNetwork()
    model.load_state_dict(torch.load(args.model, map_location='cpu'))

    # convert img to tensor
    img = Image.open(args.input_img)
    img = transforms.Resize(args.img_size)(img)
    img = transforms.RandomCrop((args.img_size, args.img_size))(img)
    x = transforms.ToTensor()(img)
    x = torch.unsqueeze(x, dim=0)

    mask = gen_input_mask(shape=(1, 1, x.shape[2], x.shape[3]), hole_size=((24, 48), (24, 48)), max_holes=5)

    # inpaint
    with torch.no_grad():
        x_mask = x - x * mask + mpv * mask
        input = torch.cat((x_mask, mask), dim=1)
        output = model(input)
        inpainted = poisson_blend(x, output, mask)
        imgs = torch.cat((x, x_mask, inpainted), dim=0)
        save_image(imgs, args.output_img, nrow=3)


if __name__ == '__main__':
    args = parser.parse_args()
    main(args)
