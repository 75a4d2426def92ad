# DeepSpeed Team (reduced: the DDP reference models of the ZeRO user-backward tests)

import torch
import deepspeed.comm as dist
import deepspeed
from torch.nn.parallel import DistributedDataParallel as DDP

from unit.common import DistributedTest, preferred_dtype
from unit.simple_model import SimpleModel, random_dataloader
from deepspeed.accelerator import get_accelerator


def initialize_distributed():
    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name())
    device = get_accelerator().current_device_name()
    rank = get_accelerator().current_device()
    dtype = preferred_dtype()
    return device, rank, dtype


def wrap_ddp_reference(model, device, rank):
    # Only indexed devices take device_ids/output_device; CPU modules live on one shared device.
    if torch.device(device).type == 'cpu':
        return DDP(model)
    return DDP(model, device_ids=[rank], output_device=rank)


def create_ddp_model(model_class, device, rank, dtype, seed=42, lr=1e-3, **model_kwargs):
    torch.manual_seed(seed)
    model = model_class(**model_kwargs)
    model = model.to(device=device, dtype=dtype)
    model = wrap_ddp_reference(model, device, rank)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return model, optimizer


def run_frozen_checkpoint_comparison(model_cls, use_reentrant, dtype=torch.float32, **model_kwargs):
    hidden_dim = 8
    device, rank, _ = initialize_distributed()

    # DDP reference: no parameter partitioning, so no checkpoint metadata issue.
    torch.manual_seed(42)
    model_ddp = model_cls(hidden_dim=hidden_dim, use_reentrant=use_reentrant, **model_kwargs)
    model_ddp = model_ddp.to(device=device, dtype=dtype)
    model_ddp = wrap_ddp_reference(model_ddp, device, rank)
    optimizer_ddp = torch.optim.Adam([p for p in model_ddp.parameters() if p.requires_grad], lr=1e-3)

    x_ddp = torch.randn(2, hidden_dim, device=device, dtype=dtype, requires_grad=True)
    output_ddp = model_ddp(x_ddp)
    output_ddp.backward(torch.ones_like(output_ddp))
    dist.barrier()
    optimizer_ddp.step()


class TestZeroUserBackwardBasic(DistributedTest):
    world_size = 2

    def test_loss_backward_matches_ddp(self):
        device, rank, dtype = initialize_distributed()
        model_ddp, optimizer_ddp = create_ddp_model(SimpleModel, device, rank, dtype, hidden_dim=4, nlayers=2)
        data_loader = random_dataloader(model=model_ddp, total_samples=8, hidden_dim=4, device=device)
        batch = next(iter(data_loader))
        optimizer_ddp.zero_grad()
        loss_ddp = model_ddp(batch[0], batch[1])
        loss_ddp.backward()
        optimizer_ddp.step()
