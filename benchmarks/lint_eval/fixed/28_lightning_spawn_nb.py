# Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/7550
# Scenario 14; the default rule that should find it: DK214 (fixed twin: no finding expected)
import torch.multiprocessing as mp

from my_workers import foo

if __name__ == "__main__":
    mp.spawn(foo, nprocs=2)
