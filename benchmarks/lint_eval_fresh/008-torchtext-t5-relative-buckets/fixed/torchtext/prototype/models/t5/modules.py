import math
from typing import Optional

import torch
import torch.nn as nn
from torch import Tensor


class T5MultiheadAttention(nn.MultiheadAttention):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        is_decoder: bool = False,
        dropout: float = 0.0,
        bias: bool = False,
        qkv_dim: int = 64,
        compute_relative_attention_bias: bool = False,
        relative_attention_num_buckets: int = 32,
        relative_attention_max_distance: int = 128,
        device: Optional[torch.device] = None,
        dtype=None,
    ) -> None:
        super().__init__(embed_dim, num_heads, dropout, bias, False, False, qkv_dim, qkv_dim, True, device, dtype)
        self.is_decoder = is_decoder
        self.compute_relative_attention_bias = compute_relative_attention_bias
        self.relative_attention_num_buckets = relative_attention_num_buckets
        self.relative_attention_max_distance = relative_attention_max_distance

        if compute_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(relative_attention_num_buckets, num_heads)
        else:
            self.relative_attention_bias = None

        self.device = device

    def position_bias_for(self, k: Tensor, tgt_len: int, src_len: int) -> Tensor:
        if not self.compute_relative_attention_bias:
            position_bias = torch.zeros(
                (self.num_heads, tgt_len, src_len), device=k.device, dtype=k.dtype
            ).unsqueeze(0)
        else:
            position_bias = self._compute_bias(
                tgt_len,
                src_len,
                bidirectional=(not self.is_decoder),
            )
        return position_bias

    def _compute_bias(
        self,
        query_length: int,
        key_length: int,
        bidirectional: bool = True,
    ) -> Tensor:
        """Compute binned relative position bias"""
        assert self.relative_attention_bias is not None
        context_position = torch.arange(query_length, dtype=torch.long, device=self.device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=self.device)[None, :]
        relative_position = memory_position - context_position  # shape (query_length, key_length)
        relative_position_bucket = self._relative_position_bucket(
            relative_position,  # shape (query_length, key_length)
            bidirectional=bidirectional,
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        values = self.relative_attention_bias(relative_position_bucket)  # shape (query_length, key_length, num_heads)
        values = values.permute([2, 0, 1]).unsqueeze(0)  # shape (1, num_heads, query_length, key_length)
        return values

    def _relative_position_bucket(
        self, relative_position: Tensor, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128
    ) -> Tensor:
        """Translate relative position to a bucket number for relative attention."""
        relative_buckets = torch.zeros(relative_position.shape, dtype=torch.long, device=self.device)
        if bidirectional:
            num_buckets = num_buckets // 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))

        # Half of the buckets are for exact increments in positions
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact

        # The other half of the buckets are for logarithmically bigger bins in positions up to max_distance
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )

        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets
