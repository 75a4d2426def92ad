"""Fixed twin of bug.py (https://github.com/pytorch/pytorch/issues/100243): the model is moved to its GPU
before it is wrapped, as DistributedDataParallel's documentation requires for device_ids.
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

LOCAL_RANK = int(os.getenv("LOCAL_RANK", 0))
RANK = int(os.getenv("RANK", 0))
WORLD_SIZE = int(os.getenv("WORLD_SIZE", 1))


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend, rank=RANK, world_size=WORLD_SIZE)
    try:
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
            device = torch.device("cuda", LOCAL_RANK)
            print("LOCAL_RANK   ", LOCAL_RANK, device)
            model = model.to(device)
            model = DDP(model, device_ids=[LOCAL_RANK], output_device=LOCAL_RANK)
        else:
            device = torch.device("cpu")
            model = DDP(model)
        model.eval()
        with torch.no_grad():
            print(model(torch.randn(4, 16, device=device)).argmax(1).tolist())
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
