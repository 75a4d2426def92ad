# Reduced from https://github.com/yunjey/pytorch-tutorial/issues/9
# Scenario 1; the default rule that should find it: DK001 (buggy twin)
import torch

model = BiRNN(input_size, hidden_size, num_layers, num_classes).cuda()
test_loader = torch.utils.data.DataLoader(dataset=test_dataset, batch_size=100, shuffle=False)
correct = 0
for images, labels in test_loader:
    images = images.view(-1, 28, 28).cuda()
    outputs = model(images)
    _, predicted = torch.max(outputs.data, 1)
    correct += (predicted == labels).sum()
