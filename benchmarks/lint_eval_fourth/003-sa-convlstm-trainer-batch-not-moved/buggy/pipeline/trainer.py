from typing import Dict

from torch import nn
from torch.nn.modules.loss import _Loss
from torch.optim import Optimizer
from torch.utils.data import DataLoader


class Trainer:
    def __init__(
        self,
        model: nn.Module,
        train_epochs: int,
        train_dataloader: DataLoader,
        loss_criterion: _Loss,
        optimizer: Optimizer,
    ) -> None:
        self.model = model
        self.train_epochs = train_epochs
        self.train_dataloader = train_dataloader
        self.loss_criterion = loss_criterion
        self.optimizer = optimizer

    def train(self) -> Dict:
        results = {"train_loss": []}
        for epoch in range(1, self.train_epochs + 1):
            train_loss = 0
            self.model.train()
            for _, (input, target) in enumerate(self.train_dataloader, start=1):
                output = self.model(input)

                loss = self.loss_criterion(output.flatten(), target.flatten())

                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

                train_loss = loss.item()

            train_loss /= len(self.train_dataloader)
            results["train_loss"].append(train_loss)
        return results
