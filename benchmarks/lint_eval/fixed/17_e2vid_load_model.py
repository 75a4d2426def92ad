# Reduced from https://github.com/uzh-rpg/rpg_e2vid/issues/15
# Scenario 8; the default rule that should find it: DK008 (fixed twin: no finding expected)
import torch


def load_model(path_to_model):
    print("Loading model {}...".format(path_to_model))
    raw_model = torch.load(path_to_model, map_location=torch.device("cpu"))
    arch = raw_model["arch"]
    model = build(arch, raw_model["model"])
    model.load_state_dict(raw_model["state_dict"])
    return model
