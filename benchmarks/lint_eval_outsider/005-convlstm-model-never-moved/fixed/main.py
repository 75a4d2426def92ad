from torch import nn
from torch.optim import Adam
from torch.utils.data import DataLoader

from convlstm.seq2seq import Seq2Seq
from pipeline.trainer import Trainer


def main(train_dataloader: DataLoader, valid_dataloader: DataLoader):
    loss_criterion = nn.MSELoss()
    acc_criterion = nn.L1Loss()
    model = Seq2Seq(num_channels=1, num_kernels=1, kernel_size=3, out_channels=1)
    optimizer = Adam(model.parameters(), lr=0.0005)
    trainer = Trainer(
        model=model,
        train_epochs=1,
        train_dataloader=train_dataloader,
        valid_dataloader=valid_dataloader,
        loss_criterion=loss_criterion,
        accuracy_criterion=acc_criterion,
        optimizer=optimizer,
    )
    trainer.run()
