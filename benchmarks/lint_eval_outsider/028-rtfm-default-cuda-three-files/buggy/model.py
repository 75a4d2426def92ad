import torch
import torch.nn as nn

torch.set_default_tensor_type("torch.cuda.FloatTensor")


class Model(nn.Module):
    def __init__(self, n_features, batch_size):
        super().__init__()
        self.batch_size = batch_size
        self.fc1 = nn.Linear(n_features, 512)
        self.fc2 = nn.Linear(512, 1)
        self.relu = nn.ReLU()

    def forward(self, inputs):
        return torch.sigmoid(self.fc2(self.relu(self.fc1(inputs))))
