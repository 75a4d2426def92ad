"""Reduced from https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/18 (DCRNN).

When no hidden state is passed, _set_hidden_state creates it with torch.zeros and no device, so the
first gate concatenates the GPU input with a CPU hidden state.
"""

import torch
import torch.nn as nn


class DCRNN(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.out_channels = out_channels
        self.conv_z = nn.Linear(in_channels + out_channels, out_channels)
        self.conv_r = nn.Linear(in_channels + out_channels, out_channels)
        self.conv_h = nn.Linear(in_channels + out_channels, out_channels)

    def _set_hidden_state(self, X, H):
        if H is None:
            H = torch.zeros(X.shape[0], self.out_channels)
        return H

    def _calculate_update_gate(self, X, H):
        Z = torch.cat([X, H], dim=-1)
        return torch.sigmoid(self.conv_z(Z))

    def _calculate_reset_gate(self, X, H):
        R = torch.cat([X, H], dim=-1)
        return torch.sigmoid(self.conv_r(R))

    def _calculate_candidate_state(self, X, H, R):
        H_tilde = torch.cat([X, H * R], dim=-1)
        return torch.tanh(self.conv_h(H_tilde))

    def forward(self, X, H=None):
        H = self._set_hidden_state(X, H)
        Z = self._calculate_update_gate(X, H)
        R = self._calculate_reset_gate(X, H)
        H_tilde = self._calculate_candidate_state(X, H, R)
        return Z * H + (1 - Z) * H_tilde


class RecurrentGCN(nn.Module):
    def __init__(self, node_features):
        super().__init__()
        self.recurrent = DCRNN(node_features, 32)
        self.linear = nn.Linear(32, 1)

    def forward(self, x):
        h = self.recurrent(x)
        return self.linear(torch.relu(h))


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = RecurrentGCN(node_features=4).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        x, y = torch.randn(20, 4).to(device), torch.randn(20, 1).to(device)
        cost = torch.mean((model(x) - y) ** 2)
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
    print("cost", cost.item())
