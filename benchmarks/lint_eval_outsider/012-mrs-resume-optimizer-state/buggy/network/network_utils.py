import os

import torch


def load_epoch(save_dir, resume_epoch, model, optm):
    """
    Load model from a snapshot, this function can be used to resume training
    :param save_dir: directory that saved the model
    :param resume_epoch: the epoch number to continue training
    :param model: the model created by classes defined in network/
    :param optm: a torch optimizer
    :return:
    """
    checkpoint = torch.load(
        os.path.join(save_dir, "epoch-" + str(resume_epoch - 1) + ".pth.tar"),
        map_location=lambda storage, loc: storage,
    )  # Load all tensors onto the CPU
    model.load_state_dict(checkpoint["state_dict"])
    optm.load_state_dict(checkpoint["opt_dict"])
