# Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/3738
# Scenario 6; the default rule that should find it: DK006 (buggy twin)
import torch
import torch.nn as nn
import pytorch_lightning as pl


class RNN(pl.LightningModule):
    def __init__(self, input_size, hidden_size, embeding_size, n_layers, output_size, p):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embeding = nn.Embedding(input_size, embeding_size)
        self.lstm = nn.LSTM(embeding_size, hidden_size, n_layers, dropout=p)
        self.out_fc = nn.Linear(hidden_size, output_size)

    def forward(self, batch_of_letter, hidden, cell):
        embeding = self.embeding(batch_of_letter)
        output, (hidden, cell) = self.lstm(embeding.unsqueeze(0), (hidden, cell))
        return self.out_fc(output), hidden, cell

    def training_step(self, batch, batch_idx):
        letters, targets = batch
        hidden = torch.zeros(self.n_layers, letters.size(1), self.hidden_size)
        cell = torch.zeros(self.n_layers, letters.size(1), self.hidden_size)
        loss = 0
        for i in range(letters.size(0)):
            output, hidden, cell = self(letters[i], hidden, cell)
            loss += self.criterion(output.squeeze(0), targets[i])
        return loss
