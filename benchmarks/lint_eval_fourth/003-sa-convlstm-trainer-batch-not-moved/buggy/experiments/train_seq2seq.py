from torch import nn
from torch.optim import Adam
from torch.utils.data import DataLoader

from convlstm.seq2seq import Seq2Seq
from core.constants import DEVICE
from data_loaders.moving_mnist import MovingMNIST
from pipeline.trainer import Trainer


def main():
    model = Seq2Seq(num_channels=1, kernel_size=3, num_kernels=64, padding=1, num_layers=3).to(DEVICE)
    train_dataloader = DataLoader(MovingMNIST(split="train"), batch_size=32, shuffle=True)
    trainer = Trainer(
        model=model,
        train_epochs=100,
        train_dataloader=train_dataloader,
        loss_criterion=nn.BCELoss(reduction="sum"),
        optimizer=Adam(model.parameters(), lr=1e-4),
    )
    trainer.train()


if __name__ == "__main__":
    main()
