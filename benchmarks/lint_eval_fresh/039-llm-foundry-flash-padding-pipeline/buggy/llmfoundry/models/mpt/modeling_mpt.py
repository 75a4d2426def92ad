from typing import Optional

import torch
import torch.nn as nn
from flash_attn import bert_padding


def gen_flash_attn_padding_info(
    bsz: int,
    S: int,
    past_key_len: int,
    device: torch.device,
    attention_mask: Optional[torch.Tensor] = None,
):
    flash_attn_padding_info = {}
    key_padding_mask = attention_mask
    if key_padding_mask is None:
        key_padding_mask = torch.ones((bsz, past_key_len + S),
                                      dtype=torch.bool,
                                      device=device)
    query_padding_mask = key_padding_mask[:, -S:]
    unpadding_function = bert_padding.unpad_input

    _, indices_q, cu_seqlens_q, max_seqlen_q = unpadding_function(
        torch.empty(bsz, S, 1, device=device),
        query_padding_mask,
    )
    _, indices_k, cu_seqlens_k, max_seqlen_k = unpadding_function(
        torch.empty(bsz, past_key_len + S, 1, device=device),
        key_padding_mask,
    )
    _, indices_v, _, _ = unpadding_function(
        torch.empty(bsz, past_key_len + S, 1, device=device),
        key_padding_mask,
    )

    flash_attn_padding_info['indices_q'] = indices_q
    flash_attn_padding_info['indices_k'] = indices_k
    flash_attn_padding_info['indices_v'] = indices_v
    flash_attn_padding_info['cu_seqlens_q'] = cu_seqlens_q
    flash_attn_padding_info['cu_seqlens_k'] = cu_seqlens_k
    flash_attn_padding_info['max_seqlen_q'] = max_seqlen_q
    flash_attn_padding_info['max_seqlen_k'] = max_seqlen_k
    return flash_attn_padding_info


class MPTModel(nn.Module):
    def __init__(self, wte: nn.Module, blocks: nn.ModuleList, norm_f: nn.Module):
        super().__init__()
        self.wte = wte
        self.blocks = blocks
        self.norm_f = norm_f
        self.attn_impl = 'flash'

    def forward(self, input_ids: torch.LongTensor, attention_mask: Optional[torch.Tensor] = None, past_position: int = 0):
        x = self.wte(input_ids)
        bsz, S = input_ids.shape[:2]
        flash_attn_padding_info = {}
        if self.attn_impl == 'flash':
            flash_attn_padding_info = gen_flash_attn_padding_info(
                bsz,
                S,
                past_position,
                x.device,
                attention_mask,
            )
        for b_idx, block in enumerate(self.blocks):
            x = block(x, flash_attn_padding_info=flash_attn_padding_info)
        return self.norm_f(x)
