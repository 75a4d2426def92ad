"""Fixed twin of bug.py (https://github.com/databrickslabs/dolly/pull/180): the attention mask is moved to the
model's device, as in the pull request.
"""

import torch
import torch.nn as nn


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size=50, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.lm_head = nn.Linear(hidden, vocab_size)

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(self, input_ids, attention_mask):
        h = self.embed(input_ids)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / h.size(-1) ** 0.5
        bias = (1.0 - attention_mask[:, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min
        scores = scores + bias
        return self.lm_head(torch.softmax(scores, dim=-1) @ v)

    @torch.no_grad()
    def generate(self, input_ids, attention_mask, max_new_tokens=4, pad_token_id=0):
        for _ in range(max_new_tokens):
            logits = self(input_ids, attention_mask)
            next_token = logits[:, -1].argmax(-1, keepdim=True)
            input_ids = torch.cat([input_ids, next_token], dim=-1)
            attention_mask = torch.cat([attention_mask, torch.ones_like(next_token)], dim=-1)
        return input_ids


class InstructionTextGenerationPipeline:
    def __init__(self, model):
        self.model = model

    def preprocess(self, instruction_text):
        ids = [1 + (ord(c) % 48) for c in instruction_text]
        return {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}

    def _forward(self, model_inputs, **generate_kwargs):
        input_ids = model_inputs["input_ids"]
        attention_mask = model_inputs.get("attention_mask", None)
        generated_sequence = self.model.generate(
            input_ids=input_ids.to(self.model.device),
            attention_mask=attention_mask.to(self.model.device),
            pad_token_id=0,
            **generate_kwargs,
        )
        return {"generated_sequence": generated_sequence}

    def __call__(self, instruction_text):
        return self._forward(self.preprocess(instruction_text))


if __name__ == "__main__":
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    generate_text = InstructionTextGenerationPipeline(model=TinyCausalLM().to(device))
    print(
        generate_text("Explain to me the difference between nuclear fission and fusion.")[
            "generated_sequence"
        ].shape
    )
