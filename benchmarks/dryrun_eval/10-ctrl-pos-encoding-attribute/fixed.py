"""Fixed twin of bug.py (https://github.com/huggingface/transformers/pull/19681): forward moves the table to
the input's device before indexing it, as in the merged pull request.
"""

import numpy as np
import torch
import torch.nn as nn


def angle_defn(pos, i, d_model_size):
    angle_rates = 1 / torch.pow(10000, (2 * (i // 2)) / d_model_size)
    return pos * angle_rates


def positional_encoding(position, d_model_size, dtype):
    angle_rads = angle_defn(
        torch.arange(position, dtype=dtype).unsqueeze(1),
        torch.arange(d_model_size, dtype=dtype).unsqueeze(0),
        d_model_size,
    )
    sines = torch.sin(angle_rads[:, 0::2])
    cosines = torch.cos(angle_rads[:, 1::2])
    return torch.cat([sines, cosines], dim=-1)


class CTRLModel(nn.Module):
    def __init__(self, vocab_size=100, n_positions=32, n_embd=16):
        super().__init__()
        self.d_model_size = n_embd
        self.pos_encoding = positional_encoding(n_positions, self.d_model_size, torch.float)
        self.w = nn.Embedding(vocab_size, n_embd)
        self.layernorm = nn.LayerNorm(n_embd)

    def forward(self, input_ids):
        device = input_ids.device
        position_ids = torch.arange(0, input_ids.size(-1), dtype=torch.long, device=device)
        position_ids = position_ids.unsqueeze(0).view(-1, input_ids.size(-1))
        inputs_embeds = self.w(input_ids)
        inputs_embeds *= np.sqrt(self.d_model_size)
        self.pos_encoding = self.pos_encoding.to(device)
        pos_embeds = self.pos_encoding[position_ids, :]
        hidden_states = inputs_embeds + pos_embeds
        return self.layernorm(hidden_states)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = CTRLModel().to(device)
    input_ids = torch.randint(0, 100, (2, 10), device=device)
    print(model(input_ids).shape)
