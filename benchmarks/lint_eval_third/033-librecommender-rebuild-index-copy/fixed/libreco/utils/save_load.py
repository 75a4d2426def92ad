"""Load a saved model (reduced): the state comes back on the model's device."""
import os

import torch


def load_torch_state_dict(path, model_name, device):
    model_path = os.path.join(path, f"{model_name}.pt")
    checkpoint = torch.load(model_path, map_location=device)
    return checkpoint["model_state_dict"], checkpoint["optimizer_state_dict"]
