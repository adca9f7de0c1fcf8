"""The registry: ops by name, variants by (op, variant). A plain dict, filled on import of the
block modules. Registering a name twice is an error; an unknown name is an error that lists the
known ones."""
from __future__ import annotations

import importlib

from kernels.base import Op, Variant

# Block modules in ladder order; importing one registers its op and variants.
BLOCK_MODULES = ("kernels.matmul_add", "kernels.linear", "kernels.mlp", "kernels.attention",
                 "kernels.block")

_OPS: dict[str, Op] = {}
_VARIANTS: dict[tuple[str, str], Variant] = {}
_loaded = False


class UnknownNameError(KeyError):
    """An op or variant name that is not registered; the message lists the accepted names."""

    def __str__(self):  # KeyError would print the message with quotes around it
        return str(self.args[0])


def register_op(op: Op) -> Op:
    if op.name in _OPS:
        raise ValueError(f"op {op.name!r} is already registered")
    _OPS[op.name] = op
    return op


def register_variant(variant: Variant) -> Variant:
    key = (variant.op, variant.name)
    if key in _VARIANTS:
        raise ValueError(f"variant {variant.name!r} of op {variant.op!r} is already registered")
    if variant.op not in _OPS:
        raise ValueError(f"variant {variant.name!r} names op {variant.op!r}, which is not registered")
    _VARIANTS[key] = variant
    return variant


def load_all() -> None:
    global _loaded
    if not _loaded:
        for module in BLOCK_MODULES:
            importlib.import_module(module)
        _loaded = True


def op_names() -> list[str]:
    """In ladder order (BLOCK_MODULES), whichever block module happened to be imported first."""
    load_all()
    rank = {module.rsplit(".", 1)[1]: i for i, module in enumerate(BLOCK_MODULES)}
    return sorted(_OPS, key=lambda name: rank.get(name, len(rank)))


def get_op(name: str) -> Op:
    load_all()
    if name not in _OPS:
        raise UnknownNameError(f"unknown op {name!r}; known ops: {', '.join(op_names())}")
    return _OPS[name]


def variant_names(op: str) -> list[str]:
    get_op(op)
    return [v for (o, v) in _VARIANTS if o == op]


def get_variant(op: str, name: str) -> Variant:
    known = variant_names(op)
    if name not in known:
        raise UnknownNameError(f"unknown variant {name!r} for {op}; known variants: {', '.join(known)}")
    return _VARIANTS[(op, name)]
