import numpy as np
import torch
import torch.nn.functional as F
import torch.sparse
from torch import nn
from torch.nn import Module


def trans_to_cuda(variable):
    if torch.cuda.is_available():
        return variable.cuda()
    else:
        return variable


class ItemConv(Module):
    def __init__(self, layers, emb_size=100):
        super().__init__()
        self.emb_size = emb_size
        self.layers = layers

    def forward(self, adjacency, embedding):
        values = adjacency.data
        indices = np.vstack((adjacency.row, adjacency.col))
        i = torch.LongTensor(indices)
        v = torch.FloatTensor(values)
        adjacency = torch.sparse_coo_tensor(i, v, torch.Size(adjacency.shape))
        item_embeddings = embedding
        final = [item_embeddings]
        for i in range(self.layers):
            item_embeddings = torch.sparse.mm(trans_to_cuda(adjacency), item_embeddings)
            final.append(F.normalize(item_embeddings, dim=-1, p=2))
        item_embeddings = np.sum(final, 0) / (self.layers + 1)
        return item_embeddings


class CoT(Module):
    def __init__(self, adjacency, n_node, layers, emb_size=100):
        super().__init__()
        self.adjacency = adjacency
        self.embedding = nn.Embedding(n_node, emb_size)
        self.ItemGraph = ItemConv(layers)

    def forward(self, tar):
        item_embeddings_i = self.ItemGraph(self.adjacency, self.embedding.weight)
        return torch.mm(item_embeddings_i[tar], item_embeddings_i.t())


def build(adjacency, n_node):
    return trans_to_cuda(CoT(adjacency, n_node, layers=2))
