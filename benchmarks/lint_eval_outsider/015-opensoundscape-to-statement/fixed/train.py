import torch

from opensoundscape.metrics import Metrics


def train(model, train_dataset, valid_dataset, optimizer, loss_fn, epochs=25, batch_size=1, num_workers=0):
    """Train a model: a binary torch model, e.g. torchvision.models.resnet18(pretrained=True)."""
    if torch.cuda.is_available():
        device = torch.device("cuda:0")
    else:
        device = torch.device("cpu")

    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers
    )
    valid_loader = torch.utils.data.DataLoader(
        valid_dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers
    )

    model.to(device)

    for epoch in range(epochs):
        train_metrics = Metrics(model.fc.out_features)
        model.train()
        for t in train_loader:
            X, y = t["X"], t["y"]
            X = X.to(device)
            y = y.to(device)
            targets = y.squeeze(1)

            outputs = model(X)
            loss = loss_fn(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            train_metrics.update_loss(loss.clone().detach().item())
            predictions = outputs.clone().detach().argmax(dim=1)
            train_metrics.update_metrics(targets.cpu(), predictions.cpu())

        valid_metrics = Metrics(model.fc.out_features)
        model.eval()
        with torch.no_grad():
            for t in valid_loader:
                X, y = t["X"], t["y"]
                X = X.to(device)
                y = y.to(device)
                targets = y.squeeze(1)

                outputs = model(X)
                predictions = outputs.clone().detach().argmax(dim=1)
                valid_metrics.update_metrics(targets.cpu(), predictions.cpu())
