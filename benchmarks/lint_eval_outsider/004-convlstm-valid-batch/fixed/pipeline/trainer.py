from typing import Callable, Dict, Tuple

import torch
from torch import nn
from torch.nn.modules.loss import _Loss
from torch.optim import Optimizer
from torch.utils.data import DataLoader

from core.constants import DEVICE


class Trainer:
    def __init__(
        self,
        model: nn.Module,
        train_epochs: int,
        train_dataloader: DataLoader,
        valid_dataloader: DataLoader,
        loss_criterion: _Loss,
        accuracy_criterion: Callable,
        optimizer: Optimizer,
    ) -> None:
        self.model = model.to(DEVICE)
        self.train_epochs = train_epochs
        self.train_dataloader = train_dataloader
        self.valid_dataloader = valid_dataloader
        self.loss_criterion = loss_criterion
        self.accuracy_criterion = accuracy_criterion
        self.optimizer = optimizer

    def run(self) -> Dict:
        results = {"train_loss": [], "validation_loss": [], "accuracy": []}
        for epoch in range(1, self.train_epochs + 1):
            self.model.train()
            for _, (input, target) in enumerate(self.train_dataloader, start=1):
                input, target = input.to(DEVICE), target.to(DEVICE)
                output = self.model(input)
                loss = self.loss_criterion(output.flatten(), target.flatten())
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                results["train_loss"].append(loss.item())
            valid_loss, valid_acc = self.validation()
            results["validation_loss"].append(valid_loss)
            results["accuracy"].append(valid_acc)
        return results

    def validation(self) -> Tuple[float, float]:
        self.model.eval()
        with torch.no_grad():
            input, target = next(iter(self.valid_dataloader))
            input, target = input.to(DEVICE), target.to(DEVICE)
            output = self.model(input)
            loss = self.loss_criterion(output.flatten(), target.flatten())
            acc = self.accuracy_criterion(output.flatten(), target.flatten())
        return loss.item(), acc.item()
