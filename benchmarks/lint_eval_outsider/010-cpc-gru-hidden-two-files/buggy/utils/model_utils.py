"""A library of model classes: CPC (encoder + autoregressive GRU) and its CNN encoder."""

import torch as th
from torch import nn


class CPC(nn.Module):
    def __init__(self, options):
        super().__init__()
        self.options = options
        self.dims = options["conv_dims"]
        self.ts, self.bs = options["time_steps"], options["batch_size"]
        self.hindex = int(self.options["sequence_length"] / self.options["downsampling_factor"]) - self.ts
        self.encoder = CPCEncoder(options)
        # Sequence model: GRU expects (batch, seq, feature) when batch_first=True
        self.gru = nn.GRU(input_size=self.dims[-1], hidden_size=self.dims[-1], num_layers=2, batch_first=True)
        self.wk = nn.ModuleList([nn.Linear(self.dims[-1], self.dims[-1]) for i in range(options["time_steps"])])

    def forward(self, x, hidden):
        time_sample = int(th.randint(low=0, high=self.hindex, size=(1,)))
        z = self.encoder(x).transpose(1, 2)
        encoder_samples = th.stack([z[:, time_sample + k, :] for k in range(1, self.ts + 1)])
        prior_sequence = z[:, : time_sample + 1, :]
        # Feed prior_sequence and hidden variable to generate output:o and hidden: h
        output, hidden = self.gru(prior_sequence, hidden)
        ct = output[:, time_sample, :].view(self.bs, -1)
        predictions = th.stack([self.wk[k](ct) for k in range(self.ts)])
        return encoder_samples, predictions, hidden


class CPCEncoder(nn.Module):
    def __init__(self, options):
        super().__init__()
        self.layers = nn.ModuleList()
        for i, o, k, s, p, d in options["conv_dims"][:-1]:
            self.layers.append(nn.Conv1d(i, o, k, stride=s, padding=p, dilation=d))
            self.layers.append(nn.LeakyReLU(inplace=False))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
