"""Reduced from https://github.com/talipucar/CPC/issues/1 (src/model.py and utils/model_utils.py of CPC).

CPC.init_hidden creates the GRU's initial state with torch.zeros and no device; fit passes it, with the
batch moved to the GPU, to the model.
"""

import torch
import torch.nn as nn


class CPC(nn.Module):
    def __init__(self, n_features=8, hidden=16, timesteps=2):
        super().__init__()
        self.hidden = hidden
        self.timesteps = timesteps
        self.encoder = nn.Linear(n_features, hidden)
        self.gru = nn.GRU(hidden, hidden, num_layers=1, bidirectional=False, batch_first=True)
        self.Wk = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(timesteps)])

    def init_hidden(self, batch_size):
        return torch.zeros(1, batch_size, self.hidden)

    def forward(self, x, hidden):
        z = self.encoder(x)
        t = z.size(1) - self.timesteps
        encoder_samples = z[:, t:, :]
        prior_sequence = z[:, :t, :]
        output, hidden = self.gru(prior_sequence, hidden)
        c_t = output[:, -1, :]
        predictions = torch.stack([wk(c_t) for wk in self.Wk], dim=1)
        return encoder_samples, predictions, hidden


class CPCModel:
    def __init__(self, device):
        self.device = device
        self.cpc = CPC().to(device)
        self.optimizer = torch.optim.Adam(self.cpc.parameters(), lr=1e-3)

    def fit(self, data_loader):
        for Xbatch in data_loader:
            Xbatch = Xbatch.to(self.device)
            hidden = self.cpc.init_hidden(Xbatch.size(0))
            encoder_samples, predictions, hidden = self.cpc(Xbatch, hidden)
            loss = ((encoder_samples - predictions) ** 2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data_loader = [torch.randn(4, 6, 8) for _ in range(2)]
    print("loss", CPCModel(device).fit(data_loader))
