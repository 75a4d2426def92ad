"""Run this script with 'torchrun'."""

import logging
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

from olmo.config import TrainConfig
from olmo.model import OLMo
from olmo.torch_util import barrier, get_local_rank, get_world_size
from olmo.train import Trainer

log = logging.getLogger("train")


def main(cfg: TrainConfig) -> None:
    barrier()

    device = torch.device("cuda")

    # Fill some configuration options.
    cfg.device_train_batch_size = cfg.global_train_batch_size // get_world_size()

    olmo_model = OLMo(cfg.model)
    olmo_model = olmo_model.to(device)
    dist_model = DDP(olmo_model, find_unused_parameters=False)
    trainer = Trainer(cfg=cfg, model=olmo_model, dist_model=dist_model, device=device)
    trainer.fit()


if __name__ == "__main__":
    try:
        mp.set_start_method("spawn", force=True)
    except RuntimeError as e:
        print(f"failed to set multiprocessing start method: {e}")

    # Set CUDA device.
    torch.cuda.set_device(f"cuda:{get_local_rank()}")

    # Initialize process group.
    dist.init_process_group(backend="nccl", timeout=timedelta(minutes=30))
    log.info("Process group initialized")

    yaml_path, args_list = sys.argv[1], sys.argv[2:]
    cfg = TrainConfig.load(yaml_path, args_list)
    main(cfg)
