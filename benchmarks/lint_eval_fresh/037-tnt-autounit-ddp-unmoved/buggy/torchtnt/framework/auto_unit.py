from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional, Union

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from torchtnt.utils.device import copy_data_to_device
from torchtnt.utils.env import init_from_env


@dataclass
class Strategy:
    """Dataclass representing the parallelization strategy for the AutoUnit"""

    pass


@dataclass
class DDPStrategy(Strategy):
    output_device: Optional[Union[int, torch.device]] = None
    dim: int = 0
    broadcast_buffers: bool = True
    find_unused_parameters: bool = False
    # DDP Comm Hook params
    comm_state: Optional[object] = None
    comm_hook: Optional[Callable[[object, Any], Any]] = None


def _convert_str_to_strategy(strategy: str) -> Strategy:
    if strategy == "ddp":
        return DDPStrategy()
    raise ValueError(f"Strategy {strategy} not supported.")


class AutoUnit:
    def __init__(
        self,
        *,
        module: torch.nn.Module,
        device: Optional[torch.device] = None,
        strategy: Optional[Union[Strategy, str]] = None,
    ) -> None:
        super().__init__()
        self.device: torch.device = device or init_from_env()

        if strategy:
            if isinstance(strategy, str):
                strategy = _convert_str_to_strategy(strategy)

            if isinstance(strategy, DDPStrategy):
                # wrap module in DDP
                device_ids = None
                if self.device.type == "cuda":
                    device_ids = [self.device.index]
                params_dict = asdict(strategy)
                # remove ddp comm hook variables from params dict
                del params_dict["comm_state"]
                del params_dict["comm_hook"]
                module = module.to(device)
                module = DDP(module, device_ids=device_ids, **params_dict)
                if strategy.comm_hook:
                    module.register_comm_hook(
                        state=strategy.comm_state, hook=strategy.comm_hook
                    )
        else:
            module = module.to(device)

        self.module: torch.nn.Module = module

    def move_data_to_device(self, data):
        return copy_data_to_device(data, self.device)
