"""Which tensor arguments may stay on the CPU next to tensors on an accelerator: one table that the
simulator and strict mode (`devicekit.device_rules`, at the level of ATen ops) and the linter
(`devicekit.lint`, at the level of the Python functions users call) both read. It imports nothing, so the
lint path stays free of torch.

ATen level (`CPU_ARGS`, by op packet and schema argument name):

* ``indices`` of the index ops (`INDEX_OPS`: ``aten.index``, ``aten.index_put_``, ...);
* ``lengths`` of ``aten::_pack_padded_sequence`` and ``batch_sizes`` of the packed RNN ops;
* ``input_lengths``/``target_lengths`` of ``ctc_loss`` (the CUDA kernels copy them to the CPU).

Python level (`PYTHON_CPU_ARGS`): the functions and modules a script calls, each with the ATen op it
reaches and the positions of its parameters that are those ATen arguments, read from the signatures at
torch v2.13.0: ``torch/nn/utils/rnn.py`` (``pack_padded_sequence(input, lengths, ...)`` calls
``_VF._pack_padded_sequence(input, lengths, batch_first)``) and ``torch/nn/functional.py``
(``ctc_loss(log_probs, targets, input_lengths, target_lengths, ...)`` calls ``torch.ctc_loss`` with them in
that order; ``nn.CTCLoss.forward`` takes the same four).
"""

from __future__ import annotations

__all__ = ["CPU_ARGS", "INDEX_OPS", "PYTHON_CPU_ARGS", "UNSURE_ARGS", "cpu_positions"]

# Indexing ops: CPU tensors in their `indices` argument are allowed on any device.
INDEX_OPS = frozenset(
    {
        "aten::index",
        "aten::index_put",
        "aten::index_put_",
        "aten::_index_put_impl_",
        "aten::_unsafe_index",
        "aten::_unsafe_index_put",
    }
)

# Arguments whose CPU tensors are allowed next to tensors on any device, per op packet.
_LENGTHS = frozenset({"input_lengths", "target_lengths"})
CPU_ARGS: dict[str, frozenset[str]] = {
    **dict.fromkeys(INDEX_OPS, frozenset({"indices"})),
    "aten::_pack_padded_sequence": frozenset({"lengths"}),
    **dict.fromkeys(
        (
            "aten::_pad_packed_sequence",
            "aten::_pack_padded_sequence_backward",
            "aten::lstm",
            "aten::gru",
            "aten::rnn_tanh",
            "aten::rnn_relu",
        ),
        frozenset({"batch_sizes"}),
    ),
    **dict.fromkeys(
        ("aten::ctc_loss", "aten::_ctc_loss", "aten::_cudnn_ctc_loss", "aten::_use_cudnn_ctc_loss"), _LENGTHS
    ),
}

#: Python function (or module class) -> (the ATen op it reaches, its parameters in order).
PYTHON_CPU_ARGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "torch.nn.utils.rnn.pack_padded_sequence": ("aten::_pack_padded_sequence", ("input", "lengths")),
    "torch.nn.functional.ctc_loss": (
        "aten::ctc_loss",
        ("log_probs", "targets", "input_lengths", "target_lengths"),
    ),
    "torch.ctc_loss": ("aten::ctc_loss", ("log_probs", "targets", "input_lengths", "target_lengths")),
    "torch.nn.CTCLoss": ("aten::ctc_loss", ("log_probs", "targets", "input_lengths", "target_lengths")),
}

#: Arguments the linter does not judge although the table above does not list them: cuDNN's CTC wants
#: ``targets`` on the CPU, and whether ``aten::ctc_loss`` moves CPU targets itself is not shown here, so
#: the linter stays silent about them (precision first).
UNSURE_ARGS: dict[str, frozenset[str]] = {"aten::ctc_loss": frozenset({"targets"})}


def cpu_positions(function: str) -> tuple[frozenset[int], frozenset[str]] | None:
    """For a Python function or module class of `PYTHON_CPU_ARGS` (its full name), the positions and the
    names of the parameters that may stay on the CPU (or that the linter does not judge); None for any
    other function."""
    entry = PYTHON_CPU_ARGS.get(function)
    if entry is None:
        return None
    op, params = entry
    allowed = CPU_ARGS.get(op, frozenset()) | UNSURE_ARGS.get(op, frozenset())
    return frozenset(i for i, name in enumerate(params) if name in allowed), allowed
