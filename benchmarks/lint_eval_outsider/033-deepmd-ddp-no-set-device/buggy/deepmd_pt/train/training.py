from typing import Any, Dict

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

from deepmd_pt.loss import EnergyStdLoss
from deepmd_pt.model.model import get_model
from deepmd_pt.train.wrapper import ModelWrapper
from deepmd_pt.utils.env import DEVICE, LOCAL_RANK


class Trainer:
    def __init__(self, config: Dict[str, Any], training_data, sampled):
        """Construct a DeePMD trainer."""
        model_params = config["model"]
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        self.training_dataloader = DataLoader(
            training_data,
            sampler=torch.utils.data.RandomSampler(training_data),
            batch_size=None,
            num_workers=8,
        )
        self.model = get_model(model_params, sampled).to(DEVICE)
        self.loss = EnergyStdLoss(**config.pop("loss"))
        self.wrapper = ModelWrapper(self.model, self.loss)

        if dist.is_initialized():
            # DDP will guarantee the model parameters are identical across all processes
            self.wrapper = DDP(self.wrapper, device_ids=[LOCAL_RANK], output_device=LOCAL_RANK)

        self.optimizer = torch.optim.Adam(self.wrapper.parameters(), lr=1e-3)
