"""Reduced from https://github.com/bentrevett/pytorch-sentiment-analysis/issues/93 ("2 - Upgraded
Sentiment Analysis").

The batch (text and text_lengths) comes to the GPU from the iterator; pack_padded_sequence requires
the lengths on the CPU.
"""

import torch
import torch.nn as nn


class RNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.rnn = nn.LSTM(embedding_dim, hidden_dim, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(hidden_dim * 2, output_dim)

    def forward(self, text, text_lengths):
        embedded = self.embedding(text)
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, text_lengths)
        packed_output, (hidden, cell) = self.rnn(packed_embedded)
        hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        return self.fc(hidden)


def train(model, iterator, optimizer, criterion):
    model.train()
    for text, text_lengths, label in iterator:
        optimizer.zero_grad()
        predictions = model(text, text_lengths).squeeze(1)
        loss = criterion(predictions, label)
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = RNN(50, 8, 16, 1, pad_idx=1).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    criterion = nn.BCEWithLogitsLoss().to(device)
    text = torch.randint(2, 50, (7, 3))
    text_lengths = torch.tensor([7, 5, 3])
    label = torch.tensor([1.0, 0.0, 1.0])
    iterator = [(text.to(device), text_lengths.to(device), label.to(device))]
    print("loss", train(model, iterator, optimizer, criterion))
