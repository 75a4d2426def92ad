# Reduced from https://github.com/NVIDIA/apex/issues/222
# Scenario 14; the default rule that should find it: DK014 (fixed twin: no finding expected)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
    model = Net().cuda()
    model = DDP(model)
    return model
