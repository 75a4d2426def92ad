import numpy as np
import torch

from opensoundscape.torch.loss import ResampleLoss


class PytorchModel(torch.nn.Module):
    def __init__(self, architecture, train_dataset):
        super().__init__()
        self.network = architecture
        self.train_dataset = train_dataset
        self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        self.loss_cls = ResampleLoss

    def _init_loss_fn(self):
        class_frequency = np.sum(self.train_dataset.df.values, 0)
        self.loss_fn = self.loss_cls(class_frequency)

    def train_epoch(self, train_loader, optimizer):
        self.network.to(self.device)
        self._init_loss_fn()
        for batch_data in train_loader:
            batch_tensors = batch_data["X"].to(self.device)
            batch_labels = batch_data["y"].to(self.device)
            logits = self.network.forward(batch_tensors)
            loss = self.loss_fn(logits, batch_labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
