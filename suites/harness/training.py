"""The training modes of a case (kernels/base.py MODES): what one timed call runs, and what
backward must keep.

- fwd: the forward, autograd recording its graph (dropped with the output);
- bwd: the backward of a forward stored before the call, outside the timed span (each backward
  runs once on its own graph, as in training: a graph kept with retain_graph would be run again,
  which a compiled backward that donates its buffers refuses);
- fwd_bwd: one training step, forward then backward.

The floating-point inputs become leaf parameters (`as_leaves`): the variant's modules take them
as they are (kernels/base.py `as_parameter`), so every gradient lands on an input the check
reads. Gradients are reset between calls outside the timed span, and bwd's forward is run
there (`Step.reset`: the timing loops and the profile call it before each timed call, as the L2
flush runs there); a call made without it (warm-up) does both itself first, so no call
accumulates into an earlier gradient (an extra add per parameter the timed calls would not
run).

Activation memory (`saved_bytes`): what autograd keeps for backward, read with
saved_tensors_hooks during one forward: the bytes of every distinct storage it saves that is not
an input (inputs exist anyway), and how many tensors those are. On any device; the allocator's
peak stays peak_mem_mb's job.
"""
from __future__ import annotations

import torch

from kernels.base import Call, Inputs


def as_leaves(inputs: Inputs) -> list[str]:
    """Each floating-point input replaced by a parameter over the same storage that requires
    grad (in the dict itself); their names."""
    names = []
    for name, tensor in list(inputs.items()):
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            inputs[name] = torch.nn.Parameter(tensor.detach(), requires_grad=True)
            names.append(name)
    return names


def grad_output(out: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The gradient fed to backward: random (ones would hide a transposed reduction), drawn in
    float32 from the case's generator and cast, like the inputs."""
    data = torch.randn(out.shape, generator=generator, dtype=torch.float32, device=out.device)
    return data.to(out.dtype)


class Step:
    """A zero-argument call for a training mode, with `reset` (grads to None) for the timing
    loops to run outside the timed span."""

    def __init__(self, mode: str, forward: Call, inputs: Inputs, leaves: list[str],
                 generator: torch.Generator):
        self.mode, self.forward, self.inputs, self.leaves = mode, forward, inputs, leaves
        self.generator = generator
        self.grad: torch.Tensor | None = None
        self.stored: torch.Tensor | None = None  # bwd: the forward whose backward is timed
        self.dirty = True  # a call since the last reset left gradients (or no reset yet)

    def reset(self) -> None:
        """Gradients to None; for bwd, the next call's forward (grad mode on, as the call's)."""
        for name in self.leaves:
            self.inputs[name].grad = None
        if self.mode == "bwd":
            with torch.enable_grad():
                self.stored = self.forward()
        self.dirty = False

    def _backward(self, out: torch.Tensor) -> None:
        if self.grad is None:
            self.grad = grad_output(out, self.generator)
        torch.autograd.backward(out, self.grad)

    def __call__(self) -> torch.Tensor:
        if self.dirty:
            self.reset()
        self.dirty = True
        if self.mode == "fwd":
            return self.forward()
        if self.mode == "bwd":
            out, self.stored = self.stored if self.stored is not None else self.forward(), None
            self._backward(out)
            return out
        out = self.forward()  # fwd_bwd
        self._backward(out)
        return out

    def gradients(self) -> dict[str, torch.Tensor | None]:
        return {name: self.inputs[name].grad for name in self.leaves}


def reset_of(call) -> Call | None:
    """The reset a timing loop runs before each timed call, or None (an inference call)."""
    return getattr(call, "reset", None)


def saved_bytes(forward: Call, inputs: Inputs) -> tuple[float, int]:
    """(MiB, tensors) that autograd saves for backward during one forward, inputs left out."""
    own = {t.untyped_storage().data_ptr() for t in inputs.values()
           if isinstance(t, torch.Tensor)}
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in own and ptr not in seen:
            seen[ptr] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = forward()
    del out
    return sum(seen.values()) / 2 ** 20, len(seen)
