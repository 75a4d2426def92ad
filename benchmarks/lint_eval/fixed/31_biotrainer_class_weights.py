# Reduced from https://github.com/sacdallago/biotrainer/issues/67
# Scenario 7; the default rule that should find it: DK007 (fixed twin: no finding expected)
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = CNN(n_features, n_classes).to(device)
class_weights = torch.tensor(weights_list, dtype=torch.float, device=device)
loss_function = nn.CrossEntropyLoss(weight=class_weights)
