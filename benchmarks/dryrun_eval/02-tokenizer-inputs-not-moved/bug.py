"""Reduced from https://github.com/JiachengLi1995/UCTopic/issues/1 (UCTopic example code).

The model is moved with model.to("cuda:0"), but the tokenizer's output (a dict of CPU tensors, like a
BatchEncoding) goes into model(**inputs) unmoved.
"""

import torch
import torch.nn as nn

VOCAB = {"<s>": 0, "beyonce": 1, "lives": 2, "in": 3, "los": 4, "angeles": 5, ".": 6}


def tokenizer(text, return_tensors="pt"):
    ids = [0] + [VOCAB.get(w, 6) for w in text.lower().replace(".", " .").split()]
    return {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}


class UCTopic(nn.Module):
    def __init__(self, vocab_size=7, hidden=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden)
        self.encoder = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        hidden = self.encoder(self.embeddings(input_ids))
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        phrase_repr = (hidden * mask).sum(1) / mask.sum(1)
        return hidden, phrase_repr


if __name__ == "__main__":
    model = UCTopic()
    if torch.cuda.is_available():
        model = model.to("cuda:0")
    text = "Beyonce lives in Los Angeles."
    inputs = tokenizer(text, return_tensors="pt")
    outputs, phrase_repr = model(**inputs)
    print(phrase_repr.shape)
