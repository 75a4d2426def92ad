import torch

from model import SpeechModel
from warpctc_pytorch import CTCLoss

torch.set_default_tensor_type('torch.cuda.FloatTensor')


def train(loader, epochs=10):
    model = SpeechModel()
    criterion = CTCLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=3e-4, momentum=0.9)
    for epoch in range(epochs):
        for inputs, targets, input_percentages, target_sizes in loader:
            inputs = inputs.cuda()
            out = model(inputs).transpose(0, 1)
            seq_length = out.size(0)
            sizes = (input_percentages * seq_length).int().cpu()
            loss = criterion(out, targets.cpu(), sizes, target_sizes.cpu())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
