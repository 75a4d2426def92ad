import torch
import torch.nn as nn


class MPTBlock(nn.Module):
    def __init__(self, d_model: int, attn: nn.Module, ffn: nn.Module, resid_pdrop: float = 0.0):
        super().__init__()
        self.norm_1 = nn.LayerNorm(d_model)
        self.attn = attn
        self.norm_2 = nn.LayerNorm(d_model)
        self.ffn = ffn
        self.resid_attn_dropout = nn.Dropout(resid_pdrop)
        self.resid_ffn_dropout = nn.Dropout(resid_pdrop)

    def forward(self, x: torch.Tensor, flash_attn_padding_info=None):
        a = self.norm_1(x)
        b = self.attn(a, flash_attn_padding_info=flash_attn_padding_info)
        x = x + self.resid_attn_dropout(b)
        m = self.norm_2(x)
        n = self.ffn(m)
        x = x.to(device=n.device) + self.resid_ffn_dropout(n)
        return x
