"""``prepare(model, device, optimizer)``: move a model *and its optimizer state* to a device.

``model.to(device)`` moves parameters and buffers, but an optimizer that has already taken steps
(or was restored with ``load_state_dict``) holds its own tensors -- Adam's ``exp_avg`` and
``exp_avg_sq``, SGD's ``momentum_buffer`` -- which stay where they were. The next
``optimizer.step()`` then fails with "Expected all tensors to be on the same device". ``prepare``
moves both, following the rules PyTorch itself applies in ``Optimizer.load_state_dict``.
"""

from __future__ import annotations

from typing import TypeVar, overload

import torch
from torch import nn

from .device import DeviceLike, as_device
from .messages import Message, warn
from .transfer import to_device

__all__ = ["prepare"]

M = TypeVar("M", bound=nn.Module)
O = TypeVar("O", bound=torch.optim.Optimizer)  # noqa: E741


@overload
def prepare(model: M, device: DeviceLike, optimizer: None = None) -> M: ...
@overload
def prepare(model: M, device: DeviceLike, optimizer: O) -> tuple[M, O]: ...


def prepare(model: M, device: DeviceLike, optimizer: O | None = None) -> M | tuple[M, O]:
    """Move ``model`` (in place) and ``optimizer``'s existing state to ``device``.

    Optimizer state follows ``Optimizer._process_value_according_to_param_policy`` (the policy of
    ``load_state_dict``): every state tensor goes to its parameter's device, except ``step``,
    which stays where it is (a CPU float tensor for Adam & co. with ``capturable=False`` -- keeping
    it on the host avoids a device sync per step) unless the group is ``capturable`` or ``fused``,
    in which case ``step`` goes to the parameter's device as float32. Other dtypes are never
    changed: this is about devices.

    If ``Module.to`` replaced the parameter objects (it does when
    ``torch.__future__.set_overwrite_module_params_on_conversion(True)`` is set), the optimizer is
    re-pointed at the new parameters, so it keeps updating the model.

    Warns (``UserWarning``) if the optimizer holds parameters that are not the model's: usually the
    optimizer was built for another model instance (e.g. before the model was re-created or
    deep-copied), and ``step()`` would update tensors the model never uses. Those parameters are
    not moved. Model parameters missing from the optimizer (frozen layers) are fine.

    Returns:
        ``model`` if ``optimizer`` is None, else ``(model, optimizer)``; the same objects, changed
        in place.
    """
    dev = as_device(device)
    before = list(model.parameters())
    if optimizer is not None:
        _check_params(model, before, optimizer)
    model.to(dev)
    if optimizer is None:
        return model
    after = list(model.parameters())
    replaced = {id(a): b for a, b in zip(before, after, strict=True) if a is not b}
    if replaced:
        _repoint(optimizer, replaced)
    _move_state(optimizer)
    return model, optimizer


def _check_params(model: nn.Module, params: list[nn.Parameter], optimizer: torch.optim.Optimizer) -> None:
    own = {id(p) for p in params}
    foreign = [p for g in optimizer.param_groups for p in g["params"] if id(p) not in own]
    if foreign:
        shapes = ", ".join(str(tuple(p.shape)) for p in foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        n, kind = len(foreign), type(model).__name__
        warn(
            Message(
                f"prepare: the optimizer holds {n} parameter(s) that are not parameters of "
                f"this {kind} (shapes {shapes}); they were not moved. The optimizer was "
                f"probably created for another model instance (built before the model was re-created, "
                f"copied or wrapped). Create the optimizer from model.parameters() of this model.",
                f"prepare：优化器里有 {n} 个参数不属于这个 {kind}（形状 {shapes}），它们没有被移动。"
                "这个优化器多半是为另一个模型实例创建的（在模型重新创建、复制或包装之前就建好了）。"
                "请用这个模型的 model.parameters() 创建优化器。",
            ),
            UserWarning,
            stacklevel=3,
        )


def _repoint(optimizer: torch.optim.Optimizer, replaced: dict[int, nn.Parameter]) -> None:
    for group in optimizer.param_groups:
        group["params"] = [replaced.get(id(p), p) for p in group["params"]]
    state = optimizer.state
    for old in [p for p in state if id(p) in replaced]:
        state[replaced[id(old)]] = state.pop(old)


def _move_state(optimizer: torch.optim.Optimizer) -> None:
    for group in optimizer.param_groups:
        step_to_device = bool(group.get("capturable", False) or group.get("fused", False))
        for p in group["params"]:
            st = optimizer.state.get(p)
            if st:
                for k, v in list(st.items()):  # in place: the per-parameter dict stays the same object
                    if k == "step" and isinstance(v, torch.Tensor):
                        st[k] = v.to(device=p.device, dtype=torch.float32) if step_to_device else v
                    else:  # any nesting of state values: the same walk as to_device
                        st[k] = to_device(v, p.device, non_blocking=False)
