"""Fixed twin of bug.py (https://github.com/Lightning-AI/pytorch-lightning/issues/3738): hidden and cell are
created on the batch's device.
"""

import torch
import torch.nn as nn


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, embeding_size, n_categories, n_layers, output_size, p):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embeding = nn.Embedding(input_size + n_categories, embeding_size)
        self.lstm = nn.LSTM(embeding_size + n_categories, hidden_size, n_layers, dropout=p)
        self.out_fc = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(p)

    def forward(self, batch_of_category, batch_of_letter, hidden, cell):
        embeding = self.dropout(self.embeding(batch_of_letter))
        category_plus_letter = torch.cat((batch_of_category, embeding), 1)
        out, (hidden, cell) = self.lstm(category_plus_letter.unsqueeze(0), (hidden, cell))
        out = self.out_fc(out)
        return out, (hidden, cell)

    def training_step(self, batch):
        category, letters, targets = batch
        hidden = torch.zeros(self.n_layers, category.shape[0], self.hidden_size, device=category.device)
        cell = torch.zeros(self.n_layers, category.shape[0], self.hidden_size, device=category.device)
        loss = 0
        for i in range(letters.shape[1]):
            out, (hidden, cell) = self(category, letters[:, i], hidden, cell)
            loss = loss + self.criterion(out.squeeze(0), targets[:, i])
        return loss


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = RNN(30, 32, 16, 4, 2, 30, 0.1).to(device)
    category = torch.zeros(3, 4, device=device)
    letters = torch.randint(0, 30, (3, 5), device=device)
    targets = torch.randint(0, 30, (3, 5), device=device)
    loss = model.training_step((category, letters, targets))
    loss.backward()
    print("loss", loss.item())
