# 11-VAE notebook cells (reduced: training loop, collected codes and the t-SNE plot)
import torch
from torch import nn
from torchvision import transforms
from torchvision.datasets import MNIST
from matplotlib import pyplot as plt
from sklearn.manifold import TSNE

batch_size = 256
test_loader = torch.utils.data.DataLoader(
    MNIST('./data', train=False, transform=transforms.ToTensor()),
    batch_size=batch_size, shuffle=True, num_workers=1, pin_memory=True)

# Defining the device
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

d = 20

class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(784, d ** 2), nn.ReLU(), nn.Linear(d ** 2, d * 2))
        self.decoder = nn.Sequential(nn.Linear(d, d ** 2), nn.ReLU(), nn.Linear(d ** 2, 784), nn.Sigmoid())

    def forward(self, x):
        mu_logvar = self.encoder(x.view(-1, 784)).view(-1, 2, d)
        mu = mu_logvar[:, 0, :]
        logvar = mu_logvar[:, 1, :]
        return self.decoder(mu), mu, logvar

model = VAE().to(device)

epochs = 10
codes = dict(μ=list(), logσ2=list(), y=list())
for epoch in range(0, epochs + 1):
    means, logvars, labels = list(), list(), list()
    with torch.no_grad():
        model.eval()
        for x, y in test_loader:
            x = x.to(device)
            x_hat, mu, logvar = model(x)
            means.append(mu.detach())
            logvars.append(logvar.detach())
            labels.append(y.detach())
    codes['μ'].append(torch.cat(means))
    codes['logσ2'].append(torch.cat(logvars))
    codes['y'].append(torch.cat(labels))

X, Y, E = list(), list(), list()  # input, classes, embeddings
N = 1000  # samples per epoch
epochs = (0, 5, 10)
for epoch in epochs:
    X.append(codes['μ'][epoch][:N])
    E.append(TSNE(n_components=2).fit_transform(X[-1].detach().cpu()))
    Y.append(codes['y'][epoch][:N])

f, a = plt.subplots(ncols=3)
for i, e in enumerate(epochs):
    s = a[i].scatter(E[i][:,0], E[i][:,1], c=Y[i], cmap='tab10')
plt.show()
