import torch
import torchmetrics
from torch import nn
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader
from tqdm import tqdm

from constants import BATCHSIZE, EPOCHS
from preprocess import AudioDataset
from utils.build_model import CNN14_mod


def train_loop(epoch, dataloader, scaler, model, loss_fn, optim, device='cuda:0'):
    """Train loop that trains the model."""
    model.train()
    epoch_loss = 0
    metric = torchmetrics.Accuracy()

    pbar = tqdm(enumerate(dataloader), total=len(dataloader))
    for step, (img, label) in pbar:
        optim.zero_grad()

        img = img.to(device).float()
        label = label.to(device).long()

        with autocast():
            yhat = model(img)
            train_loss = loss_fn(input=yhat, target=label)
            out = torch.softmax(yhat, dim=1)

        train_step_acc = metric(out, label)

        scaler.scale(train_loss).backward()
        scaler.step(optim)
        scaler.update()

        epoch_loss += train_loss.item()
        pbar.set_description(f"loss: {train_loss.item():.4f} acc: {train_step_acc:.4f}")

    return epoch_loss / len(dataloader), metric.compute()


def main(device='cuda:0'):
    model = CNN14_mod().to(device)
    loss_fn = nn.CrossEntropyLoss()
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler()
    loader = DataLoader(AudioDataset("train.csv"), batch_size=BATCHSIZE, shuffle=True)
    for epoch in range(EPOCHS):
        train_loop(epoch, loader, scaler, model, loss_fn, optim, device)


if __name__ == "__main__":
    main()
