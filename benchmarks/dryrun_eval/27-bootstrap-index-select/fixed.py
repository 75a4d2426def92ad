"""Fixed twin of bug.py (https://github.com/Lightning-AI/torchmetrics/issues/455): the sampled indices are
moved to the device of the inputs before index_select.
"""

import torch


def _bootstrap_sampler(size, sampling_strategy="poisson"):
    if sampling_strategy == "poisson":
        p = torch.distributions.Poisson(1)
        n = p.sample((size,))
        return torch.arange(size).repeat_interleave(n.long(), dim=0)
    if sampling_strategy == "multinomial":
        return torch.multinomial(torch.ones(size), num_samples=size, replacement=True)
    raise ValueError("Unknown sampling strategy")


def apply_to_collection(data, function, *args, **kwargs):
    if isinstance(data, (list, tuple)):
        return type(data)(apply_to_collection(d, function, *args, **kwargs) for d in data)
    return function(data, *args, **kwargs)


class MeanAbsoluteError:
    def __init__(self):
        self.sum_abs_error = 0.0
        self.total = 0

    def update(self, preds, target):
        self.sum_abs_error += (preds - target).abs().sum().item()
        self.total += target.numel()

    def compute(self):
        return self.sum_abs_error / max(self.total, 1)


class BootStrapper:
    def __init__(self, base_metric_cls, num_bootstraps=4, sampling_strategy="poisson"):
        self.metrics = [base_metric_cls() for _ in range(num_bootstraps)]
        self.sampling_strategy = sampling_strategy

    def update(self, *args):
        for idx in range(len(self.metrics)):
            size = len(args[0])
            sample_idx = _bootstrap_sampler(size, sampling_strategy=self.sampling_strategy)
            sample_idx = sample_idx.to(args[0].device)
            new_args = apply_to_collection(args, torch.index_select, dim=0, index=sample_idx)
            self.metrics[idx].update(*new_args)

    def compute(self):
        values = torch.tensor([m.compute() for m in self.metrics])
        return {"mean": values.mean().item(), "std": values.std().item()}


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    mae = BootStrapper(MeanAbsoluteError)
    preds, targets = torch.randn(32, device=device), torch.randn(32, device=device)
    mae.update(preds, targets)
    print(mae.compute())
