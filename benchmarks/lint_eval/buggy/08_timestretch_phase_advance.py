# Reduced from https://github.com/pytorch/audio/pull/457
# Scenario 4; the default rule that should find it: DK004 (buggy twin)
import math

import torch


class TimeStretch(torch.nn.Module):
    def __init__(self, hop_length=None, n_freq=201, fixed_rate=None):
        super(TimeStretch, self).__init__()
        self.fixed_rate = fixed_rate
        n_fft = (n_freq - 1) * 2
        hop_length = hop_length if hop_length is not None else n_fft // 2
        self.phase_advance = torch.linspace(0, math.pi * hop_length, n_freq)[..., None]

    def forward(self, complex_specgrams, overriding_rate=None):
        return complex_specgrams * self.phase_advance
