import numpy as np

import torch
from torch.utils.data import DataLoader
from torch.utils.data.sampler import BatchSampler, SequentialSampler, RandomSampler


def dataloader(data, batch_size, collate_fn, train=True):
    """Convenience method to obtain a `DataLoader` (random sampling for training)."""
    data_source = np.empty(len(data), dtype=object)
    data_source[:] = data

    if train:
        base_sampler = RandomSampler(data_source)
    else:
        base_sampler = SequentialSampler(data_source)

    sampler = BatchSampler(
        base_sampler,
        batch_size=batch_size,
        drop_last=False)

    return DataLoader(data_source,
                      batch_size=None,
                      collate_fn=collate_fn,
                      sampler=sampler)
