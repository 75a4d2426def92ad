"""Fixed twin of bug.py (https://github.com/lijx10/SO-Net/issues/41): the model reports its losses as Python
numbers (loss.item()), so the visualizer never holds GPU tensors.
"""

from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn


class Visualizer:
    def __init__(self):
        self.plot_data = None

    def plot_current_errors(self, epoch, counter_ratio, errors):
        if self.plot_data is None:
            self.plot_data = {"X": [], "Y": [], "legend": list(errors.keys())}
        self.plot_data["X"].append(epoch + counter_ratio)
        self.plot_data["Y"].append([errors[k] for k in self.plot_data["legend"]])
        print(np.array(self.plot_data["Y"]))


class Model:
    def __init__(self, device):
        self.device = device
        self.encoder = nn.Linear(3, 8).to(device)
        self.optimizer = torch.optim.Adam(self.encoder.parameters())

    def optimize(self, points):
        points = points.to(self.device)
        self.loss_chamfer = self.encoder(points).pow(2).mean()
        self.optimizer.zero_grad()
        self.loss_chamfer.backward()
        self.optimizer.step()

    def get_current_errors(self):
        return OrderedDict([("train_loss", self.loss_chamfer.item())])


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, visualizer = Model(device), Visualizer()
    dataset_size = 4
    for epoch in range(2):
        for epoch_iter in range(dataset_size):
            model.optimize(torch.randn(16, 3))
            errors = model.get_current_errors()
            visualizer.plot_current_errors(epoch, float(epoch_iter) / dataset_size, errors)
