# Reduced from https://github.com/pytorch/examples/pull/1142
# Scenario 14; the default rule that should find it: DK014 (buggy twin)
import os

import torch
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP


def ddp_setup():
    init_process_group(backend="nccl")


class Trainer:
    def __init__(self, model):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.model = model.to(self.local_rank)
        self.model = DDP(self.model, device_ids=[self.local_rank])
