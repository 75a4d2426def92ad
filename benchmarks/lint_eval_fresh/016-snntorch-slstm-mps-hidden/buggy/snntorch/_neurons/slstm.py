import torch
import torch.nn as nn
from .neurons import SpikingNeuron, _SpikeTensor, _SpikeTorchConv


class SLSTM(SpikingNeuron):
    """
    A spiking long short-term memory cell.
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        bias=True,
        threshold=1.0,
        spike_grad=None,
        init_hidden=False,
        reset_mechanism="none",
        output=False,
    ):
        super().__init__(threshold, spike_grad, init_hidden, reset_mechanism, output)

        if self.init_hidden:
            self.syn, self.mem = self.init_slstm()

        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias

        self.lstm_cell = nn.LSTMCell(
            self.input_size, self.hidden_size, bias=self.bias
        )

    def forward(self, input_, syn=False, mem=False):
        if hasattr(mem, "init_flag") or hasattr(
            syn, "init_flag"
        ):  # only triggered on first-pass

            syn, mem = _SpikeTorchConv(
                syn, mem, input_=self._reshape_input(input_)
            )
        elif mem is False and hasattr(
            self.mem, "init_flag"
        ):  # init_hidden case
            self.syn, self.mem = _SpikeTorchConv(
                self.syn, self.mem, input_=self._reshape_input(input_)
            )

        if not self.init_hidden:
            self.reset = self.mem_reset(mem)
            syn, mem = self._base_state_function(input_, syn, mem)
            spk = self.fire(mem)
            return spk, syn, mem

        self.reset = self.mem_reset(self.mem)
        self.syn, self.mem = self._base_state_function(input_, self.syn, self.mem)
        self.spk = self.fire(self.mem)
        if self.output:
            return self.spk, self.syn, self.mem
        return self.spk

    def _base_state_function(self, input_, syn, mem):
        base_fn_mem, base_fn_syn = self.lstm_cell(input_, (mem, syn))
        return base_fn_syn, base_fn_mem

    def _reshape_input(self, input_):
        if input_.is_cuda:
            device = "cuda"
        else:
            device = "cpu"
        b, _ = input_.size()
        return torch.zeros(b, self.hidden_size).to(device)

    @staticmethod
    def init_slstm():
        """
        Used to initialize mem and syn as an empty SpikeTensor.
        """
        mem = _SpikeTensor(init_flag=False)
        syn = _SpikeTensor(init_flag=False)

        return mem, syn
