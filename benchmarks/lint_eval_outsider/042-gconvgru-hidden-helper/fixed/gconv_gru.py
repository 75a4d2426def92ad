import torch
from torch_geometric.nn import ChebConv


class GConvGRU(torch.nn.Module):
    r"""Chebyshev Graph Convolutional Gated Recurrent Unit Cell."""

    def __init__(self, in_channels: int, out_channels: int, K: int, normalization: str = "sym", bias: bool = True):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.conv_x_z = ChebConv(in_channels, out_channels, K=K, normalization=normalization, bias=bias)
        self.conv_h_z = ChebConv(out_channels, out_channels, K=K, normalization=normalization, bias=bias)
        self.conv_x_r = ChebConv(in_channels, out_channels, K=K, normalization=normalization, bias=bias)
        self.conv_h_r = ChebConv(out_channels, out_channels, K=K, normalization=normalization, bias=bias)
        self.conv_x_h = ChebConv(in_channels, out_channels, K=K, normalization=normalization, bias=bias)
        self.conv_h_h = ChebConv(out_channels, out_channels, K=K, normalization=normalization, bias=bias)

    def _set_hidden_state(self, X, H):
        if H is None:
            H = torch.zeros(X.shape[0], self.out_channels).to(X.device)
        return H

    def _calculate_update_gate(self, X, edge_index, edge_weight, H):
        Z = self.conv_x_z(X, edge_index, edge_weight)
        Z = Z + self.conv_h_z(H, edge_index, edge_weight)
        return torch.sigmoid(Z)

    def _calculate_reset_gate(self, X, edge_index, edge_weight, H):
        R = self.conv_x_r(X, edge_index, edge_weight)
        R = R + self.conv_h_r(H, edge_index, edge_weight)
        return torch.sigmoid(R)

    def _calculate_candidate_state(self, X, edge_index, edge_weight, H, R):
        H_tilde = self.conv_x_h(X, edge_index, edge_weight)
        H_tilde = H_tilde + self.conv_h_h(H * R, edge_index, edge_weight)
        return torch.tanh(H_tilde)

    def forward(self, X, edge_index, edge_weight=None, H=None):
        """If the hidden state matrix is not present when the forward pass is called it is initialized with zeros."""
        H = self._set_hidden_state(X, H)
        Z = self._calculate_update_gate(X, edge_index, edge_weight, H)
        R = self._calculate_reset_gate(X, edge_index, edge_weight, H)
        H_tilde = self._calculate_candidate_state(X, edge_index, edge_weight, H, R)
        return Z * H + (1 - Z) * H_tilde
