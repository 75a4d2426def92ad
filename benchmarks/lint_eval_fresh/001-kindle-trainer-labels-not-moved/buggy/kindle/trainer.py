"""PyTorch trainer module."""

from typing import Optional, Tuple, Union

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data.dataloader import DataLoader
from tqdm import tqdm


class TorchTrainer:
    """Pytorch Trainer."""

    def __init__(
        self,
        model: nn.Module,
        criterion: nn.Module,
        optimizer: optim.Optimizer,
        device: Union[str, torch.device] = "cpu",
        verbose: int = 1,
    ) -> None:
        if isinstance(device, str):
            device = torch.device(device)

        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.verbose = verbose
        self.device = device

    def train(
        self,
        train_dataloader: DataLoader,
        n_epoch: int,
        test_dataloader: Optional[DataLoader] = None,
    ) -> Tuple[float, float]:
        """Train model."""
        average_loss, accuracy = -1.0, -1.0
        for epoch in range(n_epoch):
            running_loss = 0.0
            correct = 0
            total = 0

            pbar = tqdm(enumerate(train_dataloader))
            for batch, (data, labels) in pbar:
                self.optimizer.zero_grad()

                model_out = self.model(data.to(self.device))
                loss = self.criterion(model_out, labels)
                loss.backward()
                self.optimizer.step()

                _, predicted = torch.max(model_out, 1)
                total += labels.size(0)
                correct += (predicted == labels).sum().item()
                running_loss += loss.item()

            if test_dataloader is not None:
                self.test(test_dataloader)

            average_loss = running_loss / (batch + 1)
            accuracy = correct / total
        return average_loss, accuracy

    @torch.no_grad()
    def test(self, test_dataloader: DataLoader) -> Tuple[float, float]:
        """Test model."""
        running_loss = 0.0
        correct = 0
        total = 0
        for batch, (data, labels) in enumerate(test_dataloader):
            model_out = self.model(data.to(self.device))
            running_loss += self.criterion(model_out, labels).item()

            _, predicted = torch.max(model_out, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
        return running_loss / (batch + 1), correct / total
