"""A LightningModule with a custom loss, in the shape of the report (the module around the loss is
written for the reduction; the loss lines are the report's)."""
import torch
import torch.nn as nn
import pytorch_lightning as pl


class PenalizedMSELoss(nn.Module):
    def __init__(self, penalty=2.0):
        super().__init__()
        self.penalty = penalty

    def forward(self, y_pred, y_true):
        penalty_factor = torch.ones(
            y_pred.size(0), dtype=torch.float32, device=y_pred.device
        ) # error occur from this line
        penalty_factor[(y_pred * y_true) < 0] = self.penalty
        return torch.mean(penalty_factor * (y_pred - y_true) ** 2)


class Regressor(pl.LightningModule):
    def __init__(self, n_features):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 64), nn.ReLU(), nn.Linear(64, 1))
        self.loss_fn = PenalizedMSELoss()

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_pred = self.net(x).squeeze(-1)
        loss = self.loss_fn(y_pred, y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main(train_loader):
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=10)
    trainer.fit(Regressor(n_features=32), train_loader)
