"""Reduced from https://github.com/wingedsheep/transformer/issues/4 (main.py of wingedsheep/transformer).

PositionalEncoding builds its table with NumPy and returns torch.from_numpy(...), a CPU tensor, which
forward adds to the GPU token embeddings.
"""

import numpy as np
import torch
import torch.nn as nn


def get_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PositionalEncoding(nn.Module):
    def __init__(self, embedding_dimension, max_sequence_length):
        super().__init__()
        self.embedding_dimension = embedding_dimension
        self.max_sequence_length = max_sequence_length

    def forward(self, x):
        positional_encoding = np.zeros((self.max_sequence_length, self.embedding_dimension))
        for pos in range(self.max_sequence_length):
            for i in range(0, self.embedding_dimension, 2):
                positional_encoding[pos, i] = np.sin(pos / (10000 ** ((2 * i) / self.embedding_dimension)))
                positional_encoding[pos, i + 1] = np.cos(
                    pos / (10000 ** ((2 * (i + 1)) / self.embedding_dimension))
                )
        return x + torch.from_numpy(positional_encoding).float()


class LanguageModel(nn.Module):
    def __init__(self, number_of_tokens=50, max_sequence_length=12, embedding_dimension=16):
        super().__init__()
        self.token_embedding = nn.Embedding(number_of_tokens, embedding_dimension)
        self.positional_encoding = PositionalEncoding(embedding_dimension, max_sequence_length)
        self.lm_head = nn.Linear(embedding_dimension, number_of_tokens)

    def forward(self, x):
        token_embeddings = self.token_embedding(x)
        return self.lm_head(self.positional_encoding(token_embeddings))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = LanguageModel().to(get_device())
    tokens = torch.randint(0, 50, (2, 12)).to(get_device())
    print(model(tokens).shape)
