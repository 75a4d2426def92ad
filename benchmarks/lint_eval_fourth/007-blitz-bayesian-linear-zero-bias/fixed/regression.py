import torch
import torch.nn as nn

from blitz.modules.linear_bayesian_layer import BayesianLinear
from blitz.utils import variational_estimator

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@variational_estimator
class BayesianRegressor(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.blinear1 = BayesianLinear(input_dim, 512, bias=False)
        self.blinear2 = BayesianLinear(512, output_dim, bias=False)

    def forward(self, x):
        x_ = self.blinear1(x)
        x_ = torch.relu(x_)
        return self.blinear2(x_)


def train(dataloader_train, epochs=10):
    regressor = BayesianRegressor(13, 1).to(device)
    optimizer = torch.optim.Adam(regressor.parameters(), lr=0.01)
    criterion = torch.nn.MSELoss()
    for epoch in range(epochs):
        for i, (datapoints, labels) in enumerate(dataloader_train):
            optimizer.zero_grad()
            loss = regressor.sample_elbo(inputs=datapoints.to(device),
                                         labels=labels.to(device),
                                         criterion=criterion,
                                         sample_nbr=3,
                                         complexity_cost_weight=1 / 10000)
            loss.backward()
            optimizer.step()
