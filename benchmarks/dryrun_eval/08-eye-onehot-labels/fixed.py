"""Fixed twin of bug.py (https://github.com/Harry24k/CW-pytorch/issues/3): the identity matrix is created on
the device before it is indexed with the GPU labels.
"""

import torch
import torch.nn as nn


def cw_l2_attack(model, images, labels, device, c=1e-4, kappa=0, max_iter=3, learning_rate=0.01):
    images = images.to(device)
    labels = labels.to(device)
    w = torch.zeros_like(images, requires_grad=True).to(device)
    optimizer = torch.optim.Adam([w], lr=learning_rate)

    def f(x):
        outputs = model(x)
        one_hot_labels = torch.eye(len(outputs[0]), device=device)[labels]
        i, _ = torch.max((1 - one_hot_labels) * outputs, dim=1)
        j = torch.masked_select(outputs, one_hot_labels.bool())
        return torch.clamp(j - i, min=-kappa)

    for _ in range(max_iter):
        a = 1 / 2 * (nn.Tanh()(w) + 1)
        loss1 = nn.MSELoss(reduction="sum")(a, images)
        loss2 = torch.sum(c * f(a))
        cost = loss1 + loss2
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
    return (1 / 2 * (nn.Tanh()(w) + 1)).detach()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 10)).to(device)
    images, labels = torch.rand(4, 3, 8, 8), torch.randint(0, 10, (4,))
    print(cw_l2_attack(model, images, labels, device).shape)
