"""A cost formula kept as data: one expression that both computes an op's FLOPs (or bytes) and is
printed in the report and the README, so the number and its description cannot drift apart.

    Formula("2*M*N*K + M*N").evaluate({"M": 64, "N": 64, "K": 64})   # 528384
    Formula("2*M*N*K + M*N").text                                     # '2·M·N·K + M·N'

The expression may use the op's parameters, `itemsize` (bytes per element of the case's dtype),
numbers, + - * / // **, parentheses and `a if cond else b` with == / != on categorical
parameters; nothing else (no calls, no attributes), checked once when the formula is made.
"""
from __future__ import annotations

import ast
import re
from typing import Mapping

_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Name, ast.Load,
            ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.USub,
            ast.Eq, ast.NotEq)


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pairs(node: ast.Compare):
    """Both orders of each comparison: `norm == 'rms'` and `'rms' == norm`."""
    left = node.left
    for right in node.comparators:
        yield left, right
        yield right, left
        left = right


class Formula:
    def __init__(self, expression: str, names: tuple[str, ...] | None = None):
        self.expression = expression
        tree = ast.parse(expression, mode="eval")
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED):
                raise ValueError(f"formula {expression!r}: {type(node).__name__} is not allowed")
        self.names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
        # (name, text) of every `name == 'text'` test: the caller checks the text is a choice,
        # since a misspelt one would silently take the other branch.
        self.compared = frozenset(
            (side.id, other.value) for node in ast.walk(tree) if isinstance(node, ast.Compare)
            for side, other in _pairs(node) if isinstance(side, ast.Name)
            and isinstance(other, ast.Constant) and isinstance(other.value, str))
        if names is not None and not self.names <= set(names):
            unknown = sorted(self.names - set(names))
            raise ValueError(f"formula {expression!r}: unknown name(s) {unknown}; "
                             f"known: {', '.join(names)}")
        self._code = compile(tree, "<formula>", "eval")

    def evaluate(self, values: Mapping[str, object]) -> float:
        missing = self.names - set(values)
        if missing:
            raise KeyError(f"formula {self.expression!r} needs {sorted(missing)}")
        # Safe to eval: __init__ admitted arithmetic on names only (no calls, no attributes).
        return float(eval(self._code, {"__builtins__": {}}, dict(values)))

    @property
    def text(self) -> str:
        """For people: `2·M·N·K + M·N`, `S²`, `D/H` (the formulas divide only where it is exact)."""
        text = re.sub(r"\*\*(\d+)", lambda m: m.group(1).translate(_SUPERSCRIPT), self.expression)
        return text.replace("//", "/").replace("*", "·")

    def __repr__(self):
        return f"Formula({self.expression!r})"
