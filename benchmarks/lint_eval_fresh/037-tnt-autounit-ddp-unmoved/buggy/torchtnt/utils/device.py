import os

import torch


def get_device_from_env() -> torch.device:
    """Function that gets the torch.device based on the current environment."""
    if torch.cuda.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if local_rank >= torch.cuda.device_count():
            raise RuntimeError(
                "The local rank is larger than the number of available GPUs."
            )
        device = torch.device(f"cuda:{local_rank}")
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    return device


def copy_data_to_device(data, device: torch.device, *args, **kwargs):
    if isinstance(data, (list, tuple)):
        return type(data)(copy_data_to_device(e, device, *args, **kwargs) for e in data)
    if isinstance(data, dict):
        return {k: copy_data_to_device(v, device, *args, **kwargs) for k, v in data.items()}
    if hasattr(data, "to"):
        return data.to(device, *args, **kwargs)
    return data
