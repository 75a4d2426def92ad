import numpy as np
import torch

from CustomizedLinear import CustomizedLinear

Dim_INPUT = 2
Dim_HIDDEN = 5
Dim_OUTPUT = 1

get_bin_matrix = lambda Dim0, Dim1: np.random.choice([0, 1], size=(Dim0, Dim1))
mask = torch.tensor(get_bin_matrix(Dim_INPUT, Dim_HIDDEN))

device = torch.device('cuda')
batch = 1
x = torch.randn(batch, Dim_INPUT).to(device)
y = torch.randn(batch, Dim_OUTPUT).to(device)

model = torch.nn.Sequential(
    CustomizedLinear(mask, bias=None),
    torch.nn.Linear(Dim_HIDDEN, Dim_OUTPUT, bias=None),
).to(device)

y_pred = model(x)
loss = (y_pred - y).abs().mean()
loss.backward()
