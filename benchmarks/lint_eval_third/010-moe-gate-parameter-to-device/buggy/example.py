import torch
from torch import nn
from torch.optim import Adam

from moe import MoE


def train(x, y, model, loss_fn, optim):
    model.train()
    y_hat, aux_loss = model(x.float())
    loss = loss_fn(y_hat, y)
    total_loss = loss + aux_loss
    optim.zero_grad()
    total_loss.backward()
    optim.step()
    return model


input_size = 1000
num_classes = 20
num_experts = 10
hidden_size = 64
batch_size = 5
k = 4

# determine device
if torch.cuda.is_available():
	device = torch.device('cuda')
else:
	device = torch.device('cpu')

# instantiate the MoE layer
model = MoE(input_size, num_classes, num_experts,hidden_size, k=k, noisy_gating=True, device=device)
model = model.to(device)
loss_fn = nn.NLLLoss()
optim = Adam(model.parameters())

x = torch.rand(batch_size, input_size)
y = torch.randint(num_classes, (batch_size, 1)).squeeze(1)
model = train(x.to(device), y.to(device), model, loss_fn, optim)
