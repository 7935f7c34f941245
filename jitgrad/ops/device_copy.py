"""Copies between devices (``x.to("cuda")``, ``x.cpu()``): the one op whose input and output live on
different devices, so the registry runs its forward itself rather than a device's runner
(``OpDef.crosses_devices``). Its backward is the copy the other way, PyTorch's ``ToCopyBackward0``,
which is how the gradient of a CUDA result reaches a CPU leaf on the CPU.

Its lowering is a copy: within one compiled program every value is on one device, so what a backend
writes for it is the copy on that device (a program whose inputs are on two devices is for the
compiler to split or refuse)."""
from __future__ import annotations

import numpy as np

from ..device import device, placed, to_device, to_host
from ..tensor import Tensor
from .meta_rules import like
from .registry import defop


def _copy_forward(a, device: str, source: str):  # noqa: ARG001 - ``source`` is read by the derivative
    if device == "cpu":
        return np.array(a, copy=True) if type(a) is np.ndarray else to_host(a)
    return to_device(a)


# ``device`` is where the copy goes, ``source`` where the input is (the backward copies back there).
copy_to_device = defop("to_device", ("self",), _copy_forward, "ToCopyBackward0", meta=like(0), crosses_devices=True,
                       kind="elementwise", recompute=True, lower=lambda self: self,
                       self=lambda grad, device, source: copy_to_device(grad, device=source, source=device),
                       jvp=lambda self_t, device, source: copy_to_device(self_t, device=device, source=source))


def to(tensor: Tensor, target: device, copy: bool = False) -> Tensor:
    """``tensor`` on ``target`` (itself when it is there already, unless ``copy``)."""
    source, target = tensor.device, placed(target)
    if source == target:
        if not copy:
            return tensor
        if target.type != "cpu":
            return tensor.clone()
    return copy_to_device(tensor, device=str(target.type), source=str(source.type))
