# Reduced from https://github.com/pytorch/pytorch/issues/118084
# Scenario 12; the default rule that should find it: DK012 (fixed twin: no finding expected)
import torch
from torch.utils.data import DataLoader


def getDefaultDevice():
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


device = getDefaultDevice()
train_loader = DataLoader(train_dataset, batch_size=2, shuffle=True)
