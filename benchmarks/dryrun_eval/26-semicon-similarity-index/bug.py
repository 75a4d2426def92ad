"""Reduced from https://github.com/aassxun/SEMICON/issues/2 (baseline_train.py of SEMICON).

The similarity matrix S is computed on the CPU from the retrieval targets; inside the training loop it is
indexed with the batch's sample indices, which were moved to the GPU with the data.
"""

import torch
import torch.nn as nn


class ADSH_Loss(nn.Module):
    def __init__(self, code_length, gamma=200):
        super().__init__()
        self.code_length = code_length
        self.gamma = gamma

    def forward(self, F, B, S, omega):
        hash_loss = (
            ((self.code_length * S - F @ B.t()) ** 2).sum()
            / (F.shape[0] * B.shape[0])
            / self.code_length
            * 12
        )
        quantization_loss = (
            ((F - B[omega, :]) ** 2).sum() / (F.shape[0] * B.shape[0]) * self.gamma / self.code_length * 12
        )
        return hash_loss + quantization_loss, hash_loss, quantization_loss


def train(train_data, retrieval_targets, code_length, device, max_iter=2):
    num_retrieval = retrieval_targets.shape[0]
    net = nn.Linear(16, code_length).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    criterion = ADSH_Loss(code_length)
    B = torch.randn(num_retrieval, code_length).sign().to(device)
    sample_index = torch.arange(num_retrieval)
    S = (retrieval_targets @ retrieval_targets.t() > 0).float()
    S = torch.where(S == 1, torch.full_like(S, 1), torch.full_like(S, -1))
    for _ in range(max_iter):
        for data, targets, index in train_data:
            data, targets, index = data.to(device), targets.to(device), index.to(device)
            optimizer.zero_grad()
            F = net(data)
            cnn_loss, hash_loss, quan_loss = criterion(F, B, S[index, :], sample_index[index])
            cnn_loss.backward()
            optimizer.step()
    return cnn_loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    retrieval_targets = torch.eye(5)[torch.randint(0, 5, (20,))]
    train_data = [
        (torch.randn(4, 16), retrieval_targets[i * 4 : i * 4 + 4], torch.arange(i * 4, i * 4 + 4))
        for i in range(5)
    ]
    print("loss", train(train_data, retrieval_targets, code_length=12, device=device))
