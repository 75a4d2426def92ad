import torch
from torchvision.models import resnet18

from pytorch_ood.detector.knn import KNN

device = "cuda:0"

model = resnet18(num_classes=10).eval().to(device)
detector = KNN(model)


def fit(loader_in):
    zs, ys = [], []
    with torch.no_grad():
        for x, y in loader_in:
            zs.append(model(x.to(device)))
            ys.append(y.to(device))
    detector.fit_features(torch.cat(zs), torch.cat(ys))


def scores(loader_test):
    out = []
    with torch.no_grad():
        for x, y in loader_test:
            out.append(detector.predict(x.to(device)))
    return torch.cat(out)
