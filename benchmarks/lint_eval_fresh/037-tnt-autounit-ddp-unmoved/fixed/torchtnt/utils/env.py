import torch
import torch.distributed as dist

from torchtnt.utils.device import get_device_from_env


def _check_dist_env() -> bool:
    import os

    return all(k in os.environ for k in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"))


def init_from_env(*, device_type=None, pg_backend=None) -> torch.device:
    """Utility function that initializes the device and process group, if applicable."""
    device = torch.device("cpu") if device_type == "cpu" else get_device_from_env()

    if device_type is not None and device.type != device_type:
        raise RuntimeError(
            f"Device type is specified to {device_type} but got {device.type} from env"
        )

    if _check_dist_env() and not dist.is_initialized():
        pg_backend = pg_backend or ("nccl" if device.type == "cuda" else "gloo")
        dist.init_process_group(backend=pg_backend)
    return device
