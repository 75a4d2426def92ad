import os
import sys

import torch
import torch.nn as nn
import torch.distributed as dist
import torch.cuda as cuda

from torch.utils.data.dataloader import DataLoader
from torch.optim import Adam
from torch.utils.data.distributed import DistributedSampler

filepath = os.path.split(__file__)[0]
repopath = os.path.split(filepath)[0]
sys.path.append(repopath)

from lib import *
from data.dataloader import *
from utils.misc import *


def train(opt, args):
    train_dataset = eval(opt.Train.Dataset.type)(
        root=opt.Train.Dataset.root,
        sets=opt.Train.Dataset.sets,
        tfs=opt.Train.Dataset.transforms)

    if args.device_num > 1:
        cuda.set_device(args.device_id)
        dist.init_process_group(backend='nccl', rank=args.local_rank, world_size=args.device_num)
        train_sampler = DistributedSampler(train_dataset, shuffle=True)
    else:
        train_sampler = None

    train_loader = DataLoader(dataset=train_dataset,
                            batch_size=opt.Train.Dataloader.batch_size,
                            shuffle=train_sampler is None,
                            sampler=train_sampler,
                            num_workers=opt.Train.Dataloader.num_workers,
                            drop_last=True)

    model = eval(opt.Model.name)(**opt.Model)

    if args.device_num > 1:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = model.cuda()
        model = nn.parallel.DistributedDataParallel(model, device_ids=[args.device_id], find_unused_parameters=True)
    else:
        model = model.cuda()

    optimizer = Adam(model.parameters(), opt.Train.Optimizer.lr)
    model.train()

    for epoch in range(1, opt.Train.Scheduler.epoch + 1):
        if args.device_num > 1 and train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for i, sample in enumerate(train_loader):
            optimizer.zero_grad()
            sample = to_cuda(sample)
            out = model(sample)
            out['loss'].backward()
            optimizer.step()

    if args.local_rank <= 0:
        torch.save(model.module.state_dict() if args.device_num > 1 else model.state_dict(),
                   os.path.join(opt.Train.Checkpoint.checkpoint_dir, 'latest.pth'))


if __name__ == '__main__':
    args = parse_args()
    opt = load_config(args.config)
    train(opt, args)
