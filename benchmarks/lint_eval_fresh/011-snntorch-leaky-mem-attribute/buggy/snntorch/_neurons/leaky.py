from .neurons import LIF
import torch


class Leaky(LIF):
    """
    First-order leaky integrate-and-fire neuron model.
    """

    def __init__(self, beta, threshold=1.0, spike_grad=None, init_hidden=False, learn_beta=False, output=False):
        super().__init__(beta, threshold, spike_grad, init_hidden, learn_beta, output)
        self._init_mem()

    def _init_mem(self):
        self.mem = torch.zeros(1)

    def reset_mem(self):
        self.mem = torch.zeros_like(self.mem, device=self.mem.device)

    def init_leaky(self):
        """Deprecated, use :class:`Leaky.reset_mem` instead"""
        self.reset_mem()
        return self.mem

    def forward(self, input_, mem=None):

        if not mem == None:
            self.mem = mem

        if self.init_hidden and not mem == None:
            raise TypeError(
                "`mem` should not be passed as an argument while `init_hidden=True`"
            )

        if not self.mem.shape == input_.shape:
            self.mem = torch.zeros_like(input_, device=self.mem.device)

        self.reset = self.mem_reset(self.mem)
        self.mem = self._base_state_function(input_) - self.reset * self.threshold
        spk = self.fire(self.mem)

        if self.output:
            return spk, self.mem
        elif self.init_hidden:
            return spk
        else:
            return spk, self.mem

    def _base_state_function(self, input_):
        base_fn = self.beta.clamp(0, 1) * self.mem + input_
        return base_fn
