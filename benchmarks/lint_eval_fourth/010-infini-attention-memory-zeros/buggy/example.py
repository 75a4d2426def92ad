import torch

from infini_attention.infini_attention import InfiniAttention

seq_len = 256
emb_dim = 128
n_head = 4
d_head = emb_dim // n_head
n_segments = 4
batch_size = 1

x = torch.randn(batch_size, seq_len, emb_dim, device='cuda')

Attention = InfiniAttention(seq_len, emb_dim, d_head, n_head, n_segments, device = 'cuda')
output = Attention(x)
