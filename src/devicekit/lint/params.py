"""Which parameters of a module's method take its data: the analysis places them where the module is.

A parameter counts when it is annotated `Tensor`, named like data (`x`, `input_ids`, `hidden_states`), or
used as a tensor in the body (`p.shape`, `p.view(...)`); not when it has a number, string or boolean default
or annotation (`steps: int = 3`, `scale=0.5`): an int times a CPU tensor is no device mismatch.
"""

from __future__ import annotations

import ast
import re

from devicekit.lint.index import walk

_TENSOR_PARAM = re.compile(
    r"^(x|xs|inputs?|input_ids|hidden(_states?)?|h|feats?|features?|emb|embs|embeds?|embeddings?|inputs?_embeds|(token|word|pos|position)_embeddings?|"
    r"logits|q|k|v|query|key|value|"
    r"src|tgt|img|imgs|images?|audio|tokens|seq|sequence|z|latents?|preds?|targets?|labels?)$",
    re.I,
)
_TENSOR_USE = frozenset(
    {
        "shape",
        "size",
        "dim",
        "ndim",
        "device",
        "dtype",
        "view",
        "reshape",
        "permute",
        "transpose",
        "unsqueeze",
        "squeeze",
        "flatten",
        "contiguous",
        "expand",
        "float",
        "half",
        "matmul",
        "softmax",
        "masked_fill",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "chunk",
        "split",
    }
)


def tensor_params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters of a method that surely take tensors: annotated `Tensor`, named like data (`x`,
    `input_ids`), or used as a tensor in the body (`p.shape`, `p.view(...)`); not those with a number,
    string or boolean default or annotation."""
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    static = any(
        (getattr(d, "id", None) or getattr(d, "attr", None)) == "staticmethod"
        for d in function.decorator_list
    )
    defaults: dict[str, ast.AST] = {}
    positional = [*function.args.posonlyargs, *function.args.args]
    for arg, default in zip(
        positional[len(positional) - len(function.args.defaults) :], function.args.defaults, strict=True
    ):
        defaults[arg.arg] = default
    for arg, default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if default is not None:
            defaults[arg.arg] = default
    used = set()
    for node in walk(function):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in _TENSOR_USE:
            used.add(node.value.id)
    found = set()
    for arg in params if static else params[1:]:  # (a static method has no `self`)
        default = defaults.get(arg.arg)
        if isinstance(default, ast.Constant) and default.value is not None:
            continue
        note = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        if note and not re.search(r"Tensor", note):
            continue
        if "Tensor" in note or arg.arg in used or _TENSOR_PARAM.match(arg.arg):
            found.add(arg.arg)
    return found
