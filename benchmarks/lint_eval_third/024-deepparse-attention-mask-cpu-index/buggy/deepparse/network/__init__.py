from torch import nn


def weights_init(m: nn.Module) -> None:
    """Initialise the weights of a linear or LSTM layer."""
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight.data)
