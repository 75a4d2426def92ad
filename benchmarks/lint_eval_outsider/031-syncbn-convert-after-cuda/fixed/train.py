import torch
import torch.nn as nn
import torchvision

from sync_batchnorm.batchnorm import convert_model

model = torchvision.models.resnet18(num_classes=10)
model = nn.DataParallel(model)
model = convert_model(model)
model.cuda()

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()


def train_step(images, labels):
    images, labels = images.cuda(), labels.cuda()
    loss = criterion(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
