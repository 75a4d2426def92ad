# Reduced from https://github.com/flwrlabs/flower/pull/1140
# Scenario 1; the default rule that should find it: DK001 (buggy twin)
import torch

DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def test(net, testloader):
    criterion = torch.nn.CrossEntropyLoss()
    correct, total, loss = 0, 0, 0.0
    with torch.no_grad():
        for images, labels in testloader:
            outputs = net(images.to(DEVICE))
            loss += criterion(outputs, labels.to(DEVICE)).item()
            total += labels.size(0)
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    return loss / len(testloader.dataset), correct / total
