import glob
import os
import time

import numpy as np
import torch
import torch.optim as optim

from model import SeeInDark

input_dir = './dataset/Sony/short/'
gt_dir = './dataset/Sony/long/'

device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')
train_fns = glob.glob(gt_dir + '0*.ARW')
train_ids = [int(os.path.split(fn)[1][0:5]) for fn in train_fns]

ps = 512


def reduce_mean(out_im, gt_im):
    return torch.abs(out_im - gt_im).mean()


def load_patch(train_id):
    input_patch = np.load(input_dir + '%05d.npy' % train_id)
    gt_patch = np.load(gt_dir + '%05d.npy' % train_id)
    return np.minimum(input_patch, 1.0), np.maximum(gt_patch, 0.0)


g_loss = np.zeros((5000, 1))

learning_rate = 1e-4
model = SeeInDark().to(device)
model._initialize_weights()
opt = optim.Adam(model.parameters(), lr=learning_rate)
for epoch in range(0, 4001):
    cnt = 0
    for ind in np.random.permutation(len(train_ids)):
        train_id = train_ids[ind]
        st = time.time()
        cnt += 1
        input_patch, gt_patch = load_patch(train_id)

        in_img = torch.from_numpy(input_patch).permute(0, 3, 1, 2).to(device)
        gt_img = torch.from_numpy(gt_patch).permute(0, 3, 1, 2).to(device)

        model.zero_grad()
        out_img = model(in_img)

        loss = reduce_mean(out_img, gt_img)
        loss.backward()

        opt.step()
        g_loss[ind] = loss.data

        print("%d %d Loss=%.3f Time=%.3f" % (epoch, cnt, np.mean(g_loss[np.where(g_loss)]), time.time() - st))
