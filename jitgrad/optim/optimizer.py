"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad`` and state dicts, as PyTorch's
``torch.optim.Optimizer``; each algorithm (``sgd.py``, ``adam.py``, ``rmsprop.py``) adds its ``step``.

A *parameter group* is a dict: ``"params"`` (a list of tensors) and the algorithm's settings
(``lr``, ``momentum``...), the defaults filled in where a group does not set them. Schedulers change
``group["lr"]`` between steps. ``state`` maps each parameter to its own dict (momentum buffers, Adam's
moments and step count), made on the parameter's first step.

``state_dict()`` numbers the parameters in group order, so a saved state loads into another
optimizer over the same parameters (another process's), whatever their identity.

A step may run inside a compiled training step (docs/compile.md, "An optimizer inside a compiled
step"): every update is written in tensor ops, with the step count a 0-d tensor of the state and the
learning rate a run-time input (``state.ParamGroup``), so a schedule and the count change nothing
the compiled program depends on. Making the state (the first step) is a Python side effect a
compiled call would not repeat: that call runs eagerly (``EagerThisCall``), the next one compiles.
"""
from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Iterable

from ..autograd import enable_grad, no_grad
from ..nn.modules.module import clear_grads
from ..ops.registry import observed
from ..tensor import Tensor
from .state import ParamGroup, ParamState


class Optimizer:
    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state = ParamState()
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group (e.g. layers unfrozen during fine-tuning); settings it lacks take the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(param).__name__}")
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = ParamGroup({**param_group, "params": params})
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears every parameter's ``.grad``: to None (the default), or to zeros in place."""
        clear_grads((param for group in self.param_groups for param in group["params"]), set_to_none)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient (``_update``, each algorithm's own) and returns the
        closure's loss, computed first with grad mode on (``step`` itself runs under ``no_grad``).

        Traced (inside ``jitgrad.compile``), a step whose state does not exist yet raises
        ``EagerThisCall``: the compiled function runs this call eagerly, which makes the state, and
        compiles the next one, which reads it as inputs."""
        if observed() and any(self._makes_state(param, group) for group in self.param_groups
                              for param in group["params"] if param.grad is not None):
            from ..compile.capture import EagerThisCall  # a trace is running: capture is imported already
            raise EagerThisCall(f"the first {type(self).__name__}.step() makes the optimizer's state, which a "
                                "compiled call would not make again")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    self._update(param, group)
        return loss

    @staticmethod
    def _gradient(param: Tensor, group: dict[str, Any], decoupled: bool = False) -> Tensor:
        """The gradient an update follows: negated for ``maximize``, with the group's weight decay as
        PyTorch applies it, added (``weight_decay * param``, L2) or, ``decoupled`` (AdamW and the
        Adam family's ``decoupled_weight_decay``), the parameter shrunk by ``1 - lr * weight_decay``."""
        grad = -param.grad if group["maximize"] else param.grad
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            if decoupled:
                param.mul_(1 - group["lr"] * weight_decay)
            else:
                grad = grad + weight_decay * param
        return grad

    def _update(self, param: Tensor, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def _makes_state(self, param: Tensor, group: dict[str, Any]) -> bool:
        """Whether ``_update`` would add entries to ``param``'s state (its first step)."""
        return not self.state.get(param)

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{settings, "params": [index, ...]}]}``; the state's
        tensors are the optimizer's own (copy them to keep a snapshot, or save with ``jitgrad.save``)."""
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            for param in group["params"]:
                index_of.setdefault(id(param), len(index_of))
            groups.append({**{k: v for k, v in group.items() if k != "params"},
                           "params": [index_of[id(p)] for p in group["params"]]})
        state = {index_of[id(param)]: value for param, value in self.state.items() if id(param) in index_of}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Takes settings and state from ``state_dict`` (as ``state_dict()`` makes it), matching
        parameters by position; floating state tensors are copied and cast to their parameter's dtype."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(saved["params"]) != len(group["params"]) for saved, group in zip(saved_groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        param_of = {index: param for saved, group in zip(saved_groups, self.param_groups)
                    for index, param in zip(saved["params"], group["params"])}
        state = ParamState()
        for index, values in state_dict["state"].items():
            if index in param_of:
                param = param_of[index]
                state[param] = {key: self._loaded_value(key, value, param) for key, value in values.items()}
        self.state = state
        self.param_groups = [ParamGroup({**copy.deepcopy({k: v for k, v in saved.items() if k != "params"}),
                                         "params": group["params"]})
                             for saved, group in zip(saved_groups, self.param_groups)]

    @staticmethod
    def _loaded_value(key: str, value: Any, param: Tensor) -> Any:
        if not isinstance(value, Tensor):
            return value
        value = value.detach().clone()
        if key != "step" and value.is_floating_point() and param.is_floating_point():
            value = value.to(param.dtype)
        return value

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    text += f"\n    {key}: {group[key]}"
        return text + "\n)"


__all__ = ["Optimizer"]
