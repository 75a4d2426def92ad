"""Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/2984 ("CrossEntropyLoss with
weights", a handwriting transformer).

The module keeps one weighted CrossEntropyLoss per letter position in a plain Python list, so moving the
model moves none of their weight buffers.
"""

import torch
import torch.nn as nn


class JJG_Transformer(nn.Module):
    def __init__(self, n_positions, n_letters):
        super().__init__()
        self.body = nn.Linear(32, n_positions * n_letters)
        self.n_positions, self.n_letters = n_positions, n_letters
        self.criterions = []
        for _ in range(n_positions):
            weight = torch.ones(n_letters)
            self.criterions.append(torch.nn.CrossEntropyLoss(weight=weight))

    def forward(self, batch_im):
        return self.body(batch_im).view(-1, self.n_positions, self.n_letters)

    def validation_step(self, batch):
        batch_im, batch_true_value_NT = batch
        out_NTA = self(batch_im)
        loss0 = self.criterions[0](out_NTA[:, 0, :], batch_true_value_NT[:, 0])
        loss1 = self.criterions[1](out_NTA[:, 1, :], batch_true_value_NT[:, 1])
        return loss0 + loss1


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = JJG_Transformer(n_positions=2, n_letters=94).to(device)
    batch = (torch.randn(4, 32, device=device), torch.randint(0, 94, (4, 2), device=device))
    with torch.no_grad():
        print("val_loss", model.validation_step(batch).item())
