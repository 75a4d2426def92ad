import torch
import torch.nn as nn


class SpikingNeuron(nn.Module):
    """Parent class for spiking neuron models."""

    def __init__(self, threshold=1.0, spike_grad=None, init_hidden=False, reset_mechanism="none", output=False):
        super().__init__()
        self.init_hidden = init_hidden
        self.output = output
        self.spike_grad = spike_grad
        self.register_buffer("threshold", torch.as_tensor(threshold))
        self.reset_mechanism_val = {"subtract": 0, "zero": 1, "none": 2}[reset_mechanism]

    def fire(self, mem):
        mem_shift = mem - self.threshold
        return self.spike_grad(mem_shift)

    def mem_reset(self, mem):
        mem_shift = mem - self.threshold
        return self.spike_grad(mem_shift).clone().detach()


class _SpikeTensor(torch.Tensor):
    """Inherits from torch.Tensor with additional attributes.
    ``init_flag`` is set at the time of initialization.
    When called in the forward function of any neuron, they are parsed and
    replaced with a torch.Tensor variable.
    """

    @staticmethod
    def __new__(cls, *args, init_flag=False, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, init_flag=True):
        self.init_flag = init_flag


def _SpikeTorchConv(*args, input_):
    """Convert SpikeTensor to torch.Tensor of the same size as ``input_``."""

    states = []
    if (
        len(args) == 1 and type(args) is not tuple
    ):  # if only one hidden state, make it iterable
        args = (args,)
    for arg in args:
        if arg.is_cuda:
            arg = arg.to("cpu")
        elif arg.is_mps:
            arg = arg.to("cpu")
        arg = torch.Tensor(arg)  # wash away the SpikeTensor class
        arg = torch.zeros_like(input_, requires_grad=True)
        states.append(arg)
    if len(states) == 1:  # otherwise, list isn't unpacked
        return states[0]

    return states
