"""Reduced from https://github.com/hcnoh/knowledge-tracing-collection-pytorch/issues/1 (train.py).

train.py sets torch.cuda.FloatTensor as the default tensor type when a GPU is present; random_split then
calls torch.randperm, now a CUDA op, with the default CPU generator.
"""

import torch
from torch.utils.data import DataLoader, Dataset, random_split


class ASSIST2009(Dataset):
    def __init__(self, seq_len, n=40, num_q=10):
        self.num_q = num_q
        self.q_seqs = torch.randint(0, num_q, (n, seq_len))
        self.r_seqs = torch.randint(0, 2, (n, seq_len))

    def __getitem__(self, index):
        return self.q_seqs[index], self.r_seqs[index]

    def __len__(self):
        return len(self.q_seqs)


def main(model_name="dkt", train_ratio=0.8, seq_len=20, batch_size=8):
    if torch.cuda.is_available():
        device = "cuda"
        torch.set_default_tensor_type(torch.cuda.FloatTensor)
    else:
        device = "cpu"

    dataset = ASSIST2009(seq_len)
    train_size = int(len(dataset) * train_ratio)
    test_size = len(dataset) - train_size
    train_dataset, test_dataset = random_split(dataset, [train_size, test_size])
    train_loader = DataLoader(train_dataset, batch_size=batch_size)
    q, r = next(iter(train_loader))
    print(model_name, device, len(train_dataset), len(test_dataset), q.shape)


if __name__ == "__main__":
    main()
