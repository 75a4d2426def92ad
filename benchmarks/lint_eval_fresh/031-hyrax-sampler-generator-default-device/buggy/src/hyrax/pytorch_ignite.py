import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Union

import ignite.distributed as idist
import torch
from ignite.engine import Engine
from torch.utils.data import Dataset, SubsetRandomSampler

from hyrax.samplers import SubsetSequentialSampler


def dist_data_loader(
    dataset: Dataset,
    config: dict,
    split: Union[str, list[str], bool] = False,
    shuffle: bool = False,
):
    """Create Pytorch Ignite distributed data loaders."""
    data_loader_kwargs = dict(config["data_loader"])
    data_loader_kwargs.pop("shuffle", None)
    data_loader_kwargs["collate_fn"] = dataset.collate

    torch_rng = torch.Generator()
    seed = config["data_set"]["seed"] if config["data_set"]["seed"] else None
    if seed is not None:
        torch_rng.manual_seed(seed)

    def make_sampler(indexes: Sequence[int], sampler_shuffle: bool):
        if not indexes:
            return None
        if sampler_shuffle:
            return SubsetRandomSampler(indexes, generator=torch_rng)
        return SubsetSequentialSampler(indexes)

    indexes = list(range(len(dataset)))
    sampler = make_sampler(indexes, shuffle)
    return idist.auto_dataloader(dataset, sampler=sampler, **data_loader_kwargs), indexes


def _inner_loop(func, device, batch):
    if isinstance(batch, tuple):
        batch = tuple(torch.from_numpy(i).to(device) if i is not None else None for i in batch)
    elif batch is not None:
        batch = torch.from_numpy(batch).to(device)
    return func(batch)


def create_engine(funcname: str, device: torch.device, model: torch.nn.Module, config: dict) -> Engine:
    """Unified creation of the pytorch engine object for either an evaluator or trainer."""
    torch.set_default_device(device.type)
    inner_step = getattr(model, funcname)
    return Engine(functools.partial(_inner_loop, inner_step, device))


def create_trainer(model: torch.nn.Module, config: dict, results_directory: Path) -> Engine:
    """Creates a trainer engine that runs the model's train_batch on the distributed device."""
    device = idist.device()
    wrapped_model = idist.auto_model(model)
    trainer = create_engine("train_batch", device, wrapped_model, config)
    return trainer
