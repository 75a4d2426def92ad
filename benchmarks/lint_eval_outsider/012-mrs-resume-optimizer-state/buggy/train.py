import torch
from torch import optim

from network import network_io, network_utils


def train_model(args, device):
    model = network_io.create_model(args)
    train_params = model.set_train_params((args["learn_rate_encoder"], args["learn_rate_decoder"]))
    optm = optim.SGD(train_params, lr=args["learn_rate_encoder"], momentum=0.9)
    criterions = network_io.create_loss(args, device=device)

    if args["resume_epoch"] > 0:
        print("Resume training from epoch {} ...".format(args["resume_epoch"]))
        network_utils.load_epoch(args["save_dir"], args["resume_epoch"], model, optm)

    model.to(device)
    for c in criterions:
        c.to(device)

    train_loader = network_io.create_loader(args)
    for epoch in range(args["resume_epoch"], args["epochs"]):
        model.train()
        model.step(train_loader, device, optm, "train", criterions)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_model(network_io.read_config(), device)
