from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class InfiniAttention(nn.Module):
    def __init__(self, seq_len: int, emb_dim: int,
                 d_head: int, n_head: int, n_segments: int,
                 is_causal: Optional[bool] = True, update: Optional[str] = 'linear',
                 device: Optional[str] = 'cpu'):
        super().__init__()
        self.seq_len = seq_len
        self.n_segments = n_segments
        self.n_head = n_head
        self.emb_dim = emb_dim
        self.d_head = d_head
        self.is_causal = is_causal
        self.update = update
        self.device = device

        self.beta = nn.Parameter(torch.ones((1,), device = device))
        self.q = nn.Linear(emb_dim, emb_dim, device = device)
        self.k = nn.Linear(emb_dim, emb_dim, device = device)
        self.v = nn.Linear(emb_dim, emb_dim, device = device)
        self.o = nn.Linear(emb_dim, emb_dim, device = device)
        self.elu = nn.ELU()
        self.register_buffer('causal', torch.tril(torch.ones(seq_len // n_segments, seq_len // n_segments, device = device)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_size, _, _ = x.size()

        memory = torch.zeros((self.n_head, self.d_head, self.d_head))
        z = torch.zeros((self.n_head, self.d_head, 1))

        query = self.q(x)
        key = self.k(x)
        value = self.v(x)

        query = query.view(batch_size, self.n_head, self.n_segments, self.seq_len // self.n_segments, self.d_head)
        key = key.view(batch_size, self.n_head, self.n_segments, self.seq_len // self.n_segments, self.d_head)
        value = value.view(batch_size, self.n_head, self.n_segments, self.seq_len // self.n_segments, self.d_head)

        output = []
        for idx in range(self.n_segments):
            sigma_q = self.elu(query[:, :, idx, :, :]) + 1.0
            sigma_k = self.elu(key[:, :, idx, :, :]) + 1.0
            A_mem = (sigma_q @ memory) / ((sigma_q @ z) + 1e-6)

            A_dot = query[:, :, idx, :, :] @ key[:, :, idx, :, :].transpose(-2, -1)
            if self.is_causal:
                A_dot.masked_fill_(self.causal == 0, float('-inf'))
            A_dot = F.softmax(A_dot / (self.d_head ** 0.5), dim = -1)
            A_dot = A_dot @ value[:, :, idx, :, :]

            attention = (F.sigmoid(self.beta) * A_mem) + ((1 - F.sigmoid(self.beta)) * A_dot)

            memory = memory + (sigma_k.transpose(-2, -1) @ value[:, :, idx, :, :])
            z = z + sigma_k.sum(dim = -2, keepdim = True)
            output.append(attention)

        attention = torch.concat(output, dim = 2).view(batch_size, self.seq_len, self.emb_dim)
        return self.o(attention)
