import os

import torch
from torch.nn import DataParallel

from models import CompletionNetwork


def train_phase_1(args, train_loader, completion_network_loss):
    gpu = torch.device('cuda:0')
    model_cn = CompletionNetwork()
    if args.data_parallel:
        model_cn = DataParallel(model_cn)
    model_cn = model_cn.to(gpu)
    opt_cn = torch.optim.Adadelta(model_cn.parameters())

    for step, x in enumerate(train_loader):
        x = x.to(gpu)
        output = model_cn(x)
        loss = completion_network_loss(x, output)
        loss.backward()
        opt_cn.step()
        opt_cn.zero_grad()
        if step % args.snaperiod_1 == 0:
            model_cn_path = os.path.join(args.result_dir, 'phase_1', 'model_cn_step%d' % step)
            if args.data_parallel:
                torch.save(model_cn.module.state_dict(), model_cn_path)
            else:
                torch.save(model_cn.state_dict(), model_cn_path)
