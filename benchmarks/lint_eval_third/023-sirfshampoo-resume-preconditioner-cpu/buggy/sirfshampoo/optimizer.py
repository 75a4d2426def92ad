"""Implementation of structured inverse-free Riemannian Fisher Shampoo (reduced)."""

from typing import Any, Dict, List

from singd.structures.base import StructuredMatrix
from singd.structures.dense import DenseMatrix
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer


class SIRFShampoo(Optimizer):
    """Structured inverse-free Riemannian Fisher Shampoo.

    The pre-conditioner factors are kept as optimizer attributes (not in `self.state`)
    and are saved and restored by `.state_dict()` and `.load_state_dict()`.
    """

    def __init__(self, model: Module, lr: float = 0.001, beta1: float = 0.001):
        params = [p for p in model.parameters() if p.requires_grad]
        super().__init__(params, dict(lr=lr, beta1=beta1))
        self.global_step = 0
        self.preconditioner: List[List[StructuredMatrix]] = [
            [DenseMatrix.eye(d, dtype=p.dtype, device=p.device) for d in p.shape]
            for group in self.param_groups
            for p in group["params"]
        ]

    def step(self, closure=None) -> None:
        for group_idx, group in enumerate(self.param_groups):
            directions = self._precondition_gradient(group_idx)
            for p, d in zip(group["params"], directions):
                p.data.add_(d, alpha=-group["lr"])
        self.global_step += 1

    def _precondition_gradient(self, group_idx: int) -> List[Tensor]:
        group = self.param_groups[group_idx]
        (param,) = group["params"]
        Ks = self.preconditioner[group_idx]
        g = param.grad.data
        for n, K in enumerate(Ks):
            g = K.rmatmat(K.matmat(g.movedim(n, 0))).movedim(0, n)
        return [g]

    STATE_ATTRIBUTES: List[str] = [
        "global_step",
        "preconditioner",
    ]

    def state_dict(self) -> Dict[str, Any]:
        """Return a save-able state of the optimizer."""
        state_dict = super().state_dict()

        for name in self.STATE_ATTRIBUTES:
            assert name not in state_dict.keys()
            state_dict[name] = getattr(self, name)

        return state_dict

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Load an optimizer state."""
        attributes = {name: state_dict.pop(name) for name in self.STATE_ATTRIBUTES}
        super().load_state_dict(state_dict)

        for name, value in attributes.items():
            setattr(self, name, value)
