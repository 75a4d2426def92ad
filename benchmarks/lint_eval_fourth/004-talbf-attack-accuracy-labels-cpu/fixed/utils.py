import numpy as np
import torch.utils.data
import torchvision.datasets as datasets
import torchvision.transforms as transforms

import config
from models import quan_resnet


def load_data(arch, bit_length):
    mid_dim = 64
    arch = arch + "_mid"

    model = torch.nn.DataParallel(quan_resnet.__dict__[arch](10, bit_length))
    model.cuda()
    if isinstance(model, torch.nn.DataParallel):
        model = model.module

    val_set = datasets.CIFAR10(root=config.cifar_root, train=False, transform=transforms.ToTensor())
    val_loader = torch.utils.data.DataLoader(dataset=val_set, batch_size=256, shuffle=False, pin_memory=True)

    mid_out = np.zeros([10000, mid_dim])
    labels = np.zeros([10000])
    start = 0
    model.eval()
    for i, (input, target) in enumerate(val_loader):
        input_var = torch.autograd.Variable(input, volatile=True).cuda()
        output = model(input_var)
        mid_out[start: start + 256] = output.detach().cpu().numpy()
        labels[start: start + 256] = target.numpy()
        start += 256

    mid_out = torch.tensor(mid_out).float().cuda()
    labels = torch.tensor(labels).float()

    return mid_out, labels
