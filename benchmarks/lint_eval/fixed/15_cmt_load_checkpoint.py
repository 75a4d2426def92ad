# Reduced from https://github.com/keunsoo-ko/CMT/issues/1
# Scenario 8; the default rule that should find it: DK008 (fixed twin: no finding expected)
import torch


def _load(checkpoint_path):
    checkpoint = torch.load(checkpoint_path, map_location="cpu")
    return checkpoint


def load_checkpoint(path, model):
    checkpoint = _load(path)
    model.load_state_dict(checkpoint["state_dict"])
    return model
