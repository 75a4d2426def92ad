from typing import Optional

import torch
from einops import rearrange


def flash_attn_fn(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    n_heads: int,
    kv_n_heads: int,
    softmax_scale: Optional[float] = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    flash_attn_padding_info: Optional[dict] = None,
):
    if flash_attn_padding_info is None:
        raise ValueError('flash_attn_padding_info is required for flash attn.')
    from flash_attn import bert_padding, flash_attn_interface  # type: ignore

    batch_size, seqlen = query.shape[:2]

    # In the following lines we move the tensors to the same devices as query, key, and value respectively. These operations should be no-ops during training.
    indices_q = flash_attn_padding_info['indices_q'].to(query.device)
    indices_k = flash_attn_padding_info['indices_k'].to(key.device)
    indices_v = flash_attn_padding_info['indices_v'].to(value.device)
    cu_seqlens_q = flash_attn_padding_info['cu_seqlens_q'].to(query.device)
    cu_seqlens_k = flash_attn_padding_info['cu_seqlens_k'].to(key.device)
    max_seqlen_q = flash_attn_padding_info['max_seqlen_q']
    max_seqlen_k = flash_attn_padding_info['max_seqlen_k']

    query_unpad = bert_padding.index_first_axis(
        rearrange(query, 'b s ... -> (b s) ...'),
        indices_q,
    )
    query_unpad = rearrange(query_unpad, 'nnz (h d) -> nnz h d', h=n_heads)

    key_unpad = bert_padding.index_first_axis(
        rearrange(key, 'b s ... -> (b s) ...'),
        indices_k,
    )
    key_unpad = rearrange(key_unpad, 'nnz (h d) -> nnz h d', h=kv_n_heads)

    value_unpad = bert_padding.index_first_axis(
        rearrange(value, 'b s ... -> (b s) ...'),
        indices_v,
    )
    value_unpad = rearrange(value_unpad, 'nnz (h d) -> nnz h d', h=kv_n_heads)

    output_unpad = flash_attn_interface.flash_attn_varlen_func(
        query_unpad, key_unpad, value_unpad,
        cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        dropout_p, softmax_scale=softmax_scale, causal=is_causal,
    )
    output = bert_padding.pad_input(
        rearrange(output_unpad, 'nnz h d -> nnz (h d)'), indices_q, batch_size, seqlen,
    )
    return output
