# Reduced from https://github.com/wingedsheep/transformer/issues/4
# Scenario 3; the default rule that should find it: DK003 (buggy twin)
import numpy as np
import torch


class PositionalEncoding(torch.nn.Module):
    def __init__(self, embedding_dimension, max_sequence_length):
        super().__init__()
        self.embedding_dimension = embedding_dimension
        self.max_sequence_length = max_sequence_length

    def forward(self, x):
        positional_encoding = np.zeros((self.max_sequence_length, self.embedding_dimension))
        for pos in range(self.max_sequence_length):
            for i in range(0, self.embedding_dimension, 2):
                positional_encoding[pos, i] = np.sin(pos / (10000 ** ((2 * i) / self.embedding_dimension)))
        return x + torch.from_numpy(positional_encoding).float()
