import torch


CUDA_ENABLED = False
DISTRIBUTED_WORLD_SIZE = 1


def var_to_numpy(v):
    return (v.cpu() if CUDA_ENABLED else v).data.numpy()


def FloatTensor(*args):
    if CUDA_ENABLED:
        return torch.cuda.FloatTensor(*args)
    else:
        return torch.FloatTensor(*args)
