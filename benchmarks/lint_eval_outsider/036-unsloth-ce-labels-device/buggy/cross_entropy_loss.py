"""Fused cross-entropy loss (reduced): the forward pass of the autograd Function and its entry point."""

import torch

from .utils import _chunked_cross_entropy_forward, _cross_entropy_forward, calculate_settings, torch_gpu_device

MAX_FUSED_SIZE = 65536  # 2**16


class Fast_CrossEntropyLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, labels, logit_softcapping: float = 0, logit_scaling: float = 0):
        n_rows, vocab_size = logits.shape
        device = logits.device

        div, mod = divmod(vocab_size, MAX_FUSED_SIZE)
        n_chunks = div + (mod != 0)
        losses = torch.empty(n_rows, dtype=torch.float32, device=device)

        if n_chunks == 1:
            BLOCK_SIZE, num_warps = calculate_settings(vocab_size)
            logsumexp = torch.empty(n_rows, dtype=torch.float32, device=device)
            with torch_gpu_device(device):
                _cross_entropy_forward[(n_rows,)](
                    logits, logits.stride(0), losses, logsumexp, labels, VOCAB_SIZE=vocab_size, BLOCK_SIZE=BLOCK_SIZE
                )
        else:
            # For large vocabs > 65336 like Gemma 256K
            logsumexp = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=device)
            with torch_gpu_device(device):
                _chunked_cross_entropy_forward[(n_rows, n_chunks)](
                    logits, logits.stride(0), losses, logsumexp, labels, VOCAB_SIZE=vocab_size, N_CHUNKS=n_chunks
                )
            logsumexp = torch.logsumexp(logsumexp, dim=1)  # Row sum
            losses += logsumexp
            losses.masked_fill_(labels == -100, 0)  # Don't forget to mask padding out!

        ctx.save_for_backward(logits, logsumexp, labels)
        return losses


def fast_cross_entropy_loss(logits, labels, logit_softcapping=0, logit_scaling=0, n_items=None):
    """logits: (batch, seq_len, vocab_size); labels: (batch, seq_len)."""
    batch, seq_len, d = logits.shape
    loss = Fast_CrossEntropyLoss.apply(logits.view(batch * seq_len, d), labels.view(-1), logit_softcapping, logit_scaling)
    if n_items is None:
        n_items = torch.count_nonzero(labels != -100)
    return loss.sum() / n_items
