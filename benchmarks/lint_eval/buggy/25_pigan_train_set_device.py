# Reduced from https://github.com/marcoamonteiro/pi-GAN/issues/22
# Scenario 14; the default rule that should find it: DK014 (buggy twin)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, world_size, opt):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    device = torch.device(rank)
    generator = Generator().to(device)
    generator_ddp = DDP(generator, device_ids=[rank], find_unused_parameters=True)
    return generator_ddp
