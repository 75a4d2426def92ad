import os

import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def get_local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK") or 0)


def get_world_size() -> int:
    if is_distributed():
        return dist.get_world_size()
    else:
        return 1


def barrier() -> None:
    if is_distributed():
        dist.barrier()
