import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from mmcv import Config
from mmcv.runner import init_dist

from mmdet.apis import train_detector
from mmdet.datasets import build_dataset
from mmdet.models import build_detector


def parse_args():
    parser = argparse.ArgumentParser(description='Train a detector')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'], default='none')
    parser.add_argument('--local_rank', type=int, default=0)
    return parser.parse_args()


def init_dist_cpu(launcher, backend, **kwargs):
    if mp.get_start_method(allow_none=True) is None:
        mp.set_start_method('spawn')
    if launcher == 'pytorch':
        dist.init_process_group(backend=backend, **kwargs)
    else:
        raise ValueError(f'Invalid launcher type: {launcher}')


def main():
    args = parse_args()
    cfg = Config.fromfile(args.config)

    if args.launcher == 'none':
        distributed = False
    else:
        distributed = True
        if torch.cuda.is_available():
            init_dist(args.launcher, **cfg.dist_params)
        else:
            cfg.dist_params['backend'] = 'gloo'
            init_dist_cpu(args.launcher, **cfg.dist_params)

    model = build_detector(cfg.model, train_cfg=cfg.train_cfg, test_cfg=cfg.test_cfg)
    datasets = [build_dataset(cfg.data.train)]
    train_detector(model, datasets, cfg, distributed=distributed, validate=True)


if __name__ == '__main__':
    main()
