import numpy as np
import torch
import torch.nn as nn

MAX_SIZE = 5000


class PositionwiseFeedForward(nn.Module):
    def __init__(self, size, hidden_size, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(size, hidden_size)
        self.w_2 = nn.Linear(hidden_size, size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(torch.relu(self.w_1(x)))) + x


class TransformerDecoder(nn.Module):
    """The Transformer Decoder from paper "Attention is all you need"."""

    def __init__(self, size, dropout, head_count=8, hidden_size=2048):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(size, head_count, dropout=dropout, batch_first=True)
        self.context_attn = nn.MultiheadAttention(size, head_count, dropout=dropout, batch_first=True)
        self.feed_forward = PositionwiseFeedForward(size, hidden_size, dropout)
        self.dropout = dropout
        self.mask = self._get_attn_subsequent_mask(MAX_SIZE)
        # Register self.mask as a buffer in TransformerDecoder, so
        # it gets TransformerDecoder's cuda behavior automatically.
        self.register_buffer("mask", self.mask)

    def forward(self, input, context, src_pad_mask, tgt_pad_mask):
        t_len = tgt_pad_mask.size(1)
        dec_mask = torch.gt(tgt_pad_mask + self.mask[:, :t_len, :t_len].expand_as(tgt_pad_mask), 0)
        query, attn = self.self_attn(input, input, input, attn_mask=dec_mask[0])
        mid, attn = self.context_attn(query, context, context, key_padding_mask=src_pad_mask)
        output = self.feed_forward(mid)
        return output, attn

    def _get_attn_subsequent_mask(self, size):
        """Get an attention mask to avoid using the subsequent info."""
        attn_shape = (1, size, size)
        subsequent_mask = np.triu(np.ones(attn_shape), k=1).astype("uint8")
        subsequent_mask = torch.from_numpy(subsequent_mask)
        return subsequent_mask
