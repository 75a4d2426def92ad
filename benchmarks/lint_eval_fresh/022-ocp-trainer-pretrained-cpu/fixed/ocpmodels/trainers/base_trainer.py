import os
from abc import ABC
from collections import OrderedDict

import torch
import torch.nn as nn

from ocpmodels.common.data_parallel import OCPDataParallel


class BaseTrainer(ABC):
    def __init__(self, task, model, optimizer, local_rank=0, cpu=False, name="base_trainer"):
        self.name = name
        self.cpu = cpu
        self.start_step = 0

        if torch.cuda.is_available() and not self.cpu:
            self.device = local_rank
        else:
            self.device = "cpu"
            self.cpu = True  # handle case when `--cpu` isn't specified
            # but there are no gpu devices available

        self.config = {"task": task, "model": model, "optim": optimizer}
        self.normalizers = {}
        self.scaler = None

    def load_model(self, model):
        self.model = model.to(self.device)
        self.model = OCPDataParallel(
            self.model,
            output_device=self.device,
            num_gpus=1 if not self.cpu else 0,
        )

    def load_pretrained(self, checkpoint_path=None, ddp_to_dp=False):
        if checkpoint_path is None or os.path.isfile(checkpoint_path) is False:
            print(f"Checkpoint: {checkpoint_path} not found!")
            return False

        print("### Loading checkpoint from: {}".format(checkpoint_path))
        checkpoint = torch.load(
            checkpoint_path,
            map_location=(torch.device("cpu") if self.cpu else None),
        )
        self.start_step = checkpoint.get("step", 0)

        # Load model, optimizer, normalizer state dict.
        # if trained with ddp and want to load in non-ddp, modify keys from
        # module.module.. -> module..
        if ddp_to_dp:
            new_dict = OrderedDict()
            for k, v in checkpoint["state_dict"].items():
                name = k[7:]
                new_dict[name] = v
            self.model.load_state_dict(new_dict)
        else:
            self.model.load_state_dict(checkpoint["state_dict"])

        self.optimizer.load_state_dict(checkpoint["optimizer"])
        for key in checkpoint["normalizers"]:
            if key in self.normalizers:
                self.normalizers[key].load_state_dict(
                    checkpoint["normalizers"][key]
                )
        return True

    def load_criterion(self):
        self.criterion = self.config["optim"].get("criterion", nn.L1Loss())
