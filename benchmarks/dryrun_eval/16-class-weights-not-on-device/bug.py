"""Reduced from https://github.com/sacdallago/biotrainer/issues/67 ("Class weights need to be sent to the
device when use_class_weights=True").

With use_class_weights the class weights are computed from the training labels on the CPU and handed to
CrossEntropyLoss; the model, the embeddings and the targets are on the GPU.
"""

import torch
import torch.nn as nn


def compute_class_weights(train_targets, n_classes):
    counts = torch.bincount(train_targets, minlength=n_classes).float()
    return counts.sum() / (n_classes * counts)


def get_loss(use_class_weights, train_targets, n_classes):
    if use_class_weights:
        class_weights = compute_class_weights(train_targets, n_classes)
        return nn.CrossEntropyLoss(weight=class_weights)
    return nn.CrossEntropyLoss()


class Solver:
    def __init__(self, network, loss_function, device):
        self.network = network.to(device)
        self.loss_function = loss_function
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=1e-3)
        self.device = device

    def train(self, dataloader, num_epochs=2):
        for _ in range(num_epochs):
            for embeddings, targets in dataloader:
                embeddings, targets = embeddings.to(self.device), targets.to(self.device)
                prediction = self.network(embeddings)
                loss = self.loss_function(prediction, targets)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n_classes = 8
    train_targets = torch.randint(0, n_classes, (64,))
    loss_function = get_loss(use_class_weights=True, train_targets=train_targets, n_classes=n_classes)
    dataloader = [(torch.randn(16, 128), train_targets[i * 16 : (i + 1) * 16]) for i in range(4)]
    solver = Solver(nn.Linear(128, n_classes), loss_function, device)
    print("loss", solver.train(dataloader))
