"""Temporal Fusion Transformer (TFT): the forecasting module, reduced."""

import torch
from torch import nn

from darts.models.forecasting.pl_forecasting_module import PLForecastingModule
from darts.models.forecasting.tft_submodels import _InterpretableMultiHeadAttention


class _TFTModule(PLForecastingModule):
    def __init__(self, hidden_size: int, num_attention_heads: int, add_relative_index: bool, **kwargs):
        super().__init__(**kwargs)
        self.add_relative_index = add_relative_index
        self.lstm_encoder = nn.LSTM(input_size=hidden_size, hidden_size=hidden_size, batch_first=True)
        self.multihead_attn = _InterpretableMultiHeadAttention(d_model=hidden_size, n_head=num_attention_heads)
        # initialize last batch size to check if new mask needs to be generated
        self.batch_size_last = -1
        self.attention_mask = None
        self.relative_index = None

    @staticmethod
    def get_relative_index(encoder_length, decoder_length, batch_size, dtype, device):
        """Returns scaled time index relative to prediction point."""
        index = torch.arange(encoder_length + decoder_length, dtype=dtype, device=device)
        index = index / (encoder_length - 1)
        return index.reshape(1, len(index), 1).repeat(batch_size, 1, 1)

    @staticmethod
    def get_attention_mask_future(encoder_length, decoder_length, batch_size, device):
        """Returns causal mask to apply for self-attention layer that acts on future input only."""
        attend_step = torch.arange(decoder_length, device=device)
        predict_step = torch.arange(0, decoder_length, device=device)[:, None]
        decoder_mask = attend_step >= predict_step
        encoder_mask = torch.zeros(batch_size, encoder_length, dtype=torch.bool, device=device)
        return torch.cat(
            (
                encoder_mask.unsqueeze(1).expand(-1, decoder_length, -1),
                decoder_mask.unsqueeze(0).expand(batch_size, -1, -1),
            ),
            dim=2,
        )

    def forward(self, x_in):
        x_cont_past, x_cont_future, x_static = x_in
        device = x_in[0].device
        batch_size = x_cont_past.shape[0]
        encoder_length = self.input_chunk_length
        decoder_length = self.output_chunk_length

        # avoid unnecessary regeneration of attention mask
        if batch_size != self.batch_size_last:
            self.attention_mask = self.get_attention_mask_future(
                encoder_length, decoder_length, batch_size, device=device
            )
            if self.add_relative_index:
                self.relative_index = self.get_relative_index(
                    encoder_length, decoder_length, batch_size, device=device, dtype=x_cont_past.dtype
                )
            self.batch_size_last = batch_size

        if self.add_relative_index:
            x_cont_past = torch.cat([x_cont_past, self.relative_index[:, :encoder_length, :]], dim=2)
        lstm_out, _ = self.lstm_encoder(x_cont_past)
        attn_out, _ = self.multihead_attn(
            q=lstm_out[:, -decoder_length:], k=lstm_out, v=lstm_out, mask=self.attention_mask
        )
        return attn_out
