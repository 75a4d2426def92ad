import torch
from ..embedding import Embedding
from EduNLP.ModelZoo import rnn, set_device


class RNNModel(object):
    def __init__(self, rnn_type, w2v, hidden_size, freeze_pretrained=True, device=None, **kwargs):
        self.embedding = Embedding(w2v, freeze_pretrained, **kwargs)
        self.rnn = rnn.LM(
            rnn_type,
            self.embedding.vocab_size,
            self.embedding.embedding_dim,
            hidden_size=hidden_size,
            embedding=self.embedding.embedding,
        )
        if device is not None:
            self.set_device(device)

    def __call__(self, items, indexing=True, padding=True, **kwargs):
        seq_idx, seq_len = self.embedding(items, indexing=indexing, padding=padding, vectorization=False)

        tokens, item = self.rnn(torch.LongTensor(seq_idx), torch.LongTensor(seq_len))

        return tokens, item

    def set_device(self, device):
        self.rnn = set_device(self.rnn, device)
