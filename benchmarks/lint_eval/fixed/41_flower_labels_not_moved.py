# Reduced from https://github.com/flwrlabs/flower/pull/1140
# Scenario 1; the default rule that should find it: DK001 (fixed twin: no finding expected)
import torch

DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def test(net, testloader):
    criterion = torch.nn.CrossEntropyLoss()
    correct, total, loss = 0, 0, 0.0
    with torch.no_grad():
        for images, labels in testloader:
            images, labels = images.to(DEVICE), labels.to(DEVICE)
            outputs = net(images)
            loss += criterion(outputs, labels).item()
            total += labels.size(0)
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    return loss / len(testloader.dataset), correct / total
