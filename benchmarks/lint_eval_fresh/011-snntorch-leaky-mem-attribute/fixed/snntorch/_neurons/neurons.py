import torch
import torch.nn as nn


class SpikingNeuron(nn.Module):
    """Parent class for spiking neuron models."""

    instances = []

    def __init__(self, threshold=1.0, spike_grad=None, init_hidden=False, output=False):
        super().__init__()
        SpikingNeuron.instances.append(self)
        self.init_hidden = init_hidden
        self.output = output
        self.spike_grad = spike_grad if spike_grad is not None else self.ATan.apply
        if not isinstance(threshold, torch.Tensor):
            threshold = torch.as_tensor(threshold)
        self.register_buffer("threshold", threshold)

    def fire(self, mem):
        """Generates spike if mem > threshold.
        Returns spk."""
        mem_shift = mem - self.threshold
        spk = self.spike_grad(mem_shift)
        return spk

    def mem_reset(self, mem):
        """Generates detached reset signal if mem > threshold.
        Returns reset."""
        mem_shift = mem - self.threshold
        reset = self.spike_grad(mem_shift).clone().detach()
        return reset

    @staticmethod
    class ATan(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input_, alpha=2.0):
            ctx.save_for_backward(input_)
            ctx.alpha = alpha
            return (input_ > 0).float()

        @staticmethod
        def backward(ctx, grad_output):
            (input_,) = ctx.saved_tensors
            grad = ctx.alpha / 2 / (1 + (torch.pi / 2 * ctx.alpha * input_).pow_(2)) * grad_output
            return grad, None


class LIF(SpikingNeuron):
    """Parent class for leaky integrate and fire neuron models."""

    def __init__(self, beta, threshold=1.0, spike_grad=None, init_hidden=False, learn_beta=False, output=False):
        super().__init__(threshold, spike_grad, init_hidden, output)
        self._beta_buffer(beta, learn_beta)

    def _beta_buffer(self, beta, learn_beta):
        if not isinstance(beta, torch.Tensor):
            beta = torch.as_tensor(beta)  # TODO: or .tensor() if no copy
        if learn_beta:
            self.beta = nn.Parameter(beta)
        else:
            self.register_buffer("beta", beta)
