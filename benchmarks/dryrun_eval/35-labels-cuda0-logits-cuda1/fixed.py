"""Fixed twin of bug.py (https://github.com/shuxueslpi/chatGLM-6B-QLoRA/issues/38): the labels are moved to
the logits' device, the fix of fe1ixxu/ALMA#73 and unslothai/unsloth#4059 for the same error.
"""

import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss


class ChatGLMForConditionalGeneration(nn.Module):
    def __init__(self, vocab_size=64, hidden=32, first_device="cpu", last_device="cpu"):
        super().__init__()
        self.first_device, self.last_device = first_device, last_device
        self.word_embeddings = nn.Embedding(vocab_size, hidden).to(first_device)
        self.layers = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU()).to(first_device)
        self.final_layernorm = nn.LayerNorm(hidden).to(last_device)
        self.lm_head = nn.Linear(hidden, vocab_size, bias=False).to(last_device)

    def forward(self, input_ids, labels=None):
        hidden_states = self.layers(self.word_embeddings(input_ids))
        hidden_states = self.final_layernorm(hidden_states.to(self.last_device))
        lm_logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
            shift_logits = lm_logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous().to(shift_logits.device)
            loss_fct = CrossEntropyLoss(ignore_index=-100)
            loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return loss, lm_logits


if __name__ == "__main__":
    torch.manual_seed(0)
    two_gpus = torch.cuda.device_count() > 1
    first, last = ("cuda:0", "cuda:1") if two_gpus else ("cpu", "cpu")
    model = ChatGLMForConditionalGeneration(first_device=first, last_device=last)
    inputs = {"input_ids": torch.randint(0, 64, (2, 10)), "labels": torch.randint(0, 64, (2, 10))}
    inputs = {k: v.to(first) for k, v in inputs.items()}
    loss, _ = model(**inputs)
    loss.backward()
    print("loss", loss.item())
