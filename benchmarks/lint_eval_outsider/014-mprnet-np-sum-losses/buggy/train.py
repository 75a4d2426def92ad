import numpy as np
import torch
import torch.optim as optim
from torch.utils.data import DataLoader

import losses
from data_RGB import get_training_data
from MPRNet import MPRNet

######### Model ###########
model_restoration = MPRNet()
model_restoration.cuda()

optimizer = optim.Adam(model_restoration.parameters(), lr=2e-4, betas=(0.9, 0.999), eps=1e-8)

######### Loss ###########
criterion_char = losses.CharbonnierLoss()
criterion_edge = losses.EdgeLoss()

train_dataset = get_training_data("./Datasets/GoPro/train", {"patch_size": 256})
train_loader = DataLoader(dataset=train_dataset, batch_size=16, shuffle=True, num_workers=16, pin_memory=True)

for epoch in range(1, 3001):
    epoch_loss = 0
    model_restoration.train()
    for i, data in enumerate(train_loader, 0):
        for param in model_restoration.parameters():
            param.grad = None

        target = data[0].cuda()
        input_ = data[1].cuda()

        restored = model_restoration(input_)

        # Compute loss at each stage
        loss_char = np.sum([criterion_char(restored[j], target) for j in range(len(restored))])
        loss_edge = np.sum([criterion_edge(restored[j], target) for j in range(len(restored))])
        loss = (loss_char) + (0.05 * loss_edge)

        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    torch.save({"epoch": epoch, "state_dict": model_restoration.state_dict()}, "model_latest.pth")
