import os

import torch.distributed as dist

from deepmd_pt.train.training import Trainer


def get_trainer(config, training_data, sampled):
    # Initialize DDP
    local_rank = os.environ.get("LOCAL_RANK")
    if local_rank is not None:
        local_rank = int(local_rank)
        assert dist.is_nccl_available()
        dist.init_process_group(backend="nccl")
    return Trainer(config, training_data, sampled)
