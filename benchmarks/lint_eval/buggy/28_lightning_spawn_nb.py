# Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/7550
# Scenario 14; the default rule that should find it: DK214 (buggy twin)
import torch.multiprocessing as mp


def foo(process_idx):
    print(process_idx)


if __name__ == "__main__":
    mp.spawn(foo, nprocs=2)
