import torch
import torch.nn as nn
from torch.autograd import Variable

idx2char = ["h", "i", "e", "l", "o"]
x_one_hot = [[[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 1, 0]]]
y_data = [1, 0, 2, 3, 3, 4]

inputs = Variable(torch.Tensor(x_one_hot))
labels = Variable(torch.LongTensor(y_data))
if torch.cuda.is_available():
    inputs.cuda()
    labels.cuda()

num_classes = 5
sequence_length = 6


class RNN(nn.Module):
    def __init__(self, num_classes, input_size, hidden_size, num_layers):
        super().__init__()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.rnn = nn.RNN(input_size=input_size, hidden_size=hidden_size, batch_first=True)

    def forward(self, x):
        h_0 = Variable(torch.zeros(x.size(0), self.num_layers, self.hidden_size))
        if torch.cuda.is_available():
            h_0.cuda()
        out, _ = self.rnn(x, h_0)
        return out.view(-1, num_classes)


rnn = RNN(num_classes, 5, 5, 1)
if torch.cuda.is_available():
    rnn.cuda()

criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(rnn.parameters(), lr=0.1)
for epoch in range(100):
    outputs = rnn(inputs)
    optimizer.zero_grad()
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    _, idx = outputs.max(1)
    idx = idx.data.numpy()
    print("Predicted string: ", "".join(idx2char[c] for c in idx.squeeze()))
