"""Fixed twin of bug.py (https://github.com/mistralai/mistral-inference/issues/252): length_tensor is moved to
the GPU before the NCCL broadcast, as in the fix pull requests #257 and #266.
"""

import os

import torch
import torch.distributed as dist


def is_torchrun():
    return all(var in os.environ for var in ["MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"])


def interactive(prompt="hello world from rank zero"):
    should_print = not is_torchrun() or dist.get_rank() == 0
    if should_print:
        tokens = [ord(c) % 32000 for c in prompt]
        length_tensor = torch.tensor([len(tokens)], dtype=torch.int)
    else:
        length_tensor = torch.tensor([0], dtype=torch.int)
    if is_torchrun():
        if dist.get_backend() == "nccl":
            length_tensor = length_tensor.cuda()
        dist.broadcast(length_tensor, src=0)
    if not should_print:
        tokens = int(length_tensor.item()) * [0]
    return len(tokens)


def main():
    for var, value in {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29534",
        "RANK": "0",
        "WORLD_SIZE": "1",
    }.items():
        os.environ.setdefault(var, value)
    if is_torchrun():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ["RANK"]))
            dist.init_process_group("nccl")
        else:
            dist.init_process_group("gloo")
    try:
        print("prompt length", interactive())
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
