import torch

from condor_pytorch.dataset import levels_from_labelbatch
from condor_pytorch.losses import condor_negloglikeloss

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model, train_loader, optimizer, num_classes, num_epochs):
    model = model.to(DEVICE)
    for epoch in range(num_epochs):
        model.train()
        for batch_idx, (features, class_labels) in enumerate(train_loader):
            levels = levels_from_labelbatch(class_labels, num_classes=num_classes)
            features = features.to(DEVICE)
            levels = levels.to(DEVICE)
            logits = model(features)
            loss = condor_negloglikeloss(logits, levels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
