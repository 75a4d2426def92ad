import torch
import torch.nn as nn


class net(nn.Module):
    def __init__(self, num_layers):
        super(net, self).__init__()

        self.layer = nn.Linear(1, 1)
        self.list_of_layers = [nn.Linear(1, 1) for i in range(num_layers)]

    def forward(self, x):
        x = self.layer(x)
        for layer in self.list_of_layers:
            x = layer(x)
        return x


n = net(4)
print(n)
n = n.cuda()
optimizer = torch.optim.SGD(n.parameters(), lr=0.1)
out = n(torch.randn(8, 1).cuda())
