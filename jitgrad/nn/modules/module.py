"""``Module``: the base class of layers and models, as PyTorch's ``torch.nn.Module``.

A module keeps what it owns in three dicts (in the order of assignment), filled by ``__setattr__``
according to the value assigned: ``_parameters`` (``Parameter``s: what an optimizer updates),
``_buffers`` (tensors that are part of the state but not trained, such as BatchNorm's running
statistics) and ``_modules`` (child modules). Everything that walks a model — ``parameters()``,
``state_dict()``, ``train()``, ``to()`` — walks these dicts, so a model written as plain attribute
assignments in ``__init__`` is complete.

They are plain ``dict``s (not ``OrderedDict``s, which ``jitgrad.compile`` does not enter) held as
attributes of the instance, so a compiled function that reads a model from its closure reaches its
tensors through them (docs/compile.md, "What a compiled function reads"), and ``training`` is a
plain bool it guards: ``model.eval()`` recompiles.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterable, Iterator, Mapping

from ...autograd import no_grad
from ...dtypes import dtype as DType
from ...dtypes import float16, float32, float64
from ...hooks import RemovableHandle
from ...tensor import Tensor
from ..parameter import Parameter


def _typename(value: Any) -> str:
    return "jitgrad.Tensor" if isinstance(value, Tensor) and not isinstance(value, Parameter) \
        else type(value).__name__


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{key}"' for key in keys)


def _indent(text: str, spaces: int) -> str:
    """Every line of ``text`` but the first indented, for a child's repr inside its parent's."""
    lines = text.split("\n")
    return "\n".join(lines[:1] + [" " * spaces + line for line in lines[1:]])


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and the keys it did not use."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def clear_grads(params: Iterable[Tensor], set_to_none: bool) -> None:
    """``zero_grad``'s work, for ``Module`` and ``Optimizer`` alike: each parameter's ``.grad`` set to
    None, or cut from any graph and zeroed in place (``detach_()`` only where it has a ``grad_fn``: as
    PyTorch's, it refuses a view, which a ``.grad`` may be)."""
    for param in params:
        grad = param.grad
        if grad is None:
            continue
        if set_to_none:
            param.grad = None
            continue
        if grad.grad_fn is not None:
            grad.detach_()
        else:
            grad.requires_grad_(False)
        grad.zero_()


class Module:
    """Base class of all layers: subclass it, assign parameters and submodules in ``__init__`` (after
    ``super().__init__()``) and write ``forward``; call the module, not ``forward``, so hooks run."""

    training: bool
    # A module's own state, set in ``__init__`` past ``__setattr__`` (which sorts what users assign).
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, "Module | None"]
    _forward_hooks: dict[int, Callable[..., Any]]
    _forward_hooks_with_kwargs: set[int]
    _forward_pre_hooks: dict[int, Callable[..., Any]]
    _forward_pre_hooks_with_kwargs: set[int]

    def __init__(self) -> None:
        set_plain = super().__setattr__
        set_plain("training", True)
        set_plain("_parameters", {})
        set_plain("_buffers", {})
        set_plain("_non_persistent_buffers_set", set())
        set_plain("_modules", {})
        set_plain("_forward_hooks", {})
        set_plain("_forward_hooks_with_kwargs", set())
        set_plain("_forward_pre_hooks", {})
        set_plain("_forward_pre_hooks_with_kwargs", set())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- calling ------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._forward_pre_hooks and not self._forward_hooks:
            return self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                changed = hook(self, args, kwargs)
                if changed is not None:
                    if not (isinstance(changed, tuple) and len(changed) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {changed}.")
                    args, kwargs = changed
            else:
                changed = hook(self, args)
                if changed is not None:
                    args = changed if isinstance(changed, tuple) else (changed,)
        result = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                changed = hook(self, args, kwargs, result)
            else:
                changed = hook(self, args, result)
            if changed is not None:
                result = changed
        return result

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` before ``forward``; a value it returns replaces the arguments (with
        ``with_kwargs``: ``hook(module, args, kwargs)`` returning ``(args, kwargs)``)."""
        return self._register_hook(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs, hook,
                                   prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` after ``forward``; a value it returns replaces the output
        (with ``with_kwargs``: ``hook(module, args, kwargs, output)``)."""
        return self._register_hook(self._forward_hooks, self._forward_hooks_with_kwargs, hook, prepend,
                                   with_kwargs)

    @staticmethod
    def _register_hook(hooks: dict, with_kwargs_ids: set, hook: Callable[..., Any], prepend: bool,
                       with_kwargs: bool) -> RemovableHandle:
        earlier = dict(hooks) if prepend else {}
        handle = RemovableHandle(hooks, hook)
        if prepend:  # the new hook first, then the earlier ones in their order
            for hook_id, earlier_hook in earlier.items():
                del hooks[hook_id]
                hooks[hook_id] = earlier_hook
        if with_kwargs:
            with_kwargs_ids.add(handle.id)
        return handle

    # ---- registering --------------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that belongs to the module's state without being trained; ``persistent=False``
        keeps it out of ``state_dict()``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(jitgrad.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(jitgrad.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, "
                             "compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name: Any, kind: str, table: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    # ---- attributes ---------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        """Called only when ``name`` is not a plain attribute: a parameter, buffer or child module."""
        state = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in state and name in state[table]:
                return state[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep=self._parameters)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(jitgrad.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if "_modules" not in self.__dict__:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep=self._modules)
            self._modules[name] = value
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(jitgrad.nn.Module or None expected)")
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(jitgrad.Tensor or None expected)")
            self._buffers[name] = value
        else:
            super().__setattr__(name, value)

    def _forget(self, name: str, keep: dict[str, Any]) -> None:
        """Removes ``name`` from wherever it was before it is registered again in ``keep``, but not from
        ``keep`` itself: a parameter (or module) assigned anew keeps its place, as in PyTorch, so
        ``parameters()`` and ``state_dict()`` keep their order (an optimizer's state is numbered by it)."""
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            if table is not keep:
                table.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        super().__delattr__(name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(name for name in names if not name[:1].isdigit())  # a Sequential's "0" is no attribute

    # ---- walking ------------------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """This module and every module below it, each once (unless ``remove_duplicate=False``)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Tensor]]:
        """The tensors of ``table`` ("_parameters" or "_buffers") of this module (and below), each
        tensor once unless ``remove_duplicate=False`` (a weight shared by two layers counts once)."""
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        seen: set[int] = set()
        for module_prefix, module in modules:
            for name, tensor in getattr(module, table).items():
                if tensor is None or (remove_duplicate and id(tensor) in seen):
                    continue
                seen.add(id(tensor))
                yield module_prefix + ("." if module_prefix else "") + name, tensor

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> "Module":
        """The module at the dotted path ``target`` ("" is this module)."""
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target: str) -> Tensor:
        """The parameter at the dotted path ``target`` ("layer.0.weight"), with PyTorch's errors."""
        return self._get_registered(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` ("norm.running_mean"), with PyTorch's errors."""
        return self._get_registered(target, "_buffers", "a buffer")

    def _get_registered(self, target: str, registry: str, kind: str) -> Tensor:
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        if name not in getattr(module, registry):
            raise AttributeError(f"`{name}` is not {kind}")
        return getattr(module, name)

    def apply(self, fn: Callable[["Module"], Any]) -> "Module":
        """``fn`` on every child (recursively), then on this module: how a custom initialisation is
        applied to a whole model."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- modes and gradients ------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears every parameter's ``.grad``: to None (the default: the next backward writes fresh
        gradients instead of adding to zeros), or to zeros in place."""
        clear_grads(self.parameters(), set_to_none)

    # ---- dtypes and devices -------------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """``to(dtype)``, ``to(device)`` or ``to(device, dtype)``: parameters (and their gradients) and
        buffers moved, floating ones cast, in place (the Parameter objects stay the same, so an optimizer
        made before still holds them)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for arg in args:
            if isinstance(arg, DType):
                dtype = arg
            elif isinstance(arg, Tensor):
                dtype = arg.dtype
            else:
                device = arg
        if device is not None:
            self._move(device)
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype!r}")
        return self._cast_floating(dtype)

    def double(self) -> "Module":
        return self._cast_floating(float64)

    def float(self) -> "Module":
        return self._cast_floating(float32)

    def half(self) -> "Module":
        return self._cast_floating(float16)

    def cpu(self) -> "Module":
        return self._move("cpu")

    def cuda(self, device: Any = None) -> "Module":
        return self._move("cuda" if device is None else device)

    def _move(self, device: Any) -> "Module":
        with no_grad():
            for module in self.modules():
                for param in module._parameters.values():
                    if param is not None:
                        param.data = param.to(device)
                        if param.grad is not None:
                            param.grad = param.grad.to(device)
                for name, buffer in module._buffers.items():
                    if buffer is not None:
                        module._buffers[name] = buffer.to(device)
        return self

    def _cast_floating(self, dtype: DType) -> "Module":
        with no_grad():
            for module in self.modules():
                for param in module._parameters.values():
                    if param is not None and param.is_floating_point():
                        param.data = param.to(dtype)
                        if param.grad is not None:
                            param.grad = param.grad.to(dtype)
                for name, buffer in module._buffers.items():
                    if buffer is not None and buffer.is_floating_point():
                        module._buffers[name] = buffer.to(dtype)
        return self

    # ---- state --------------------------------------------------------------------------------------
    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Parameters and persistent buffers by dotted name. The tensors share memory with the model
        (detached unless ``keep_vars``): save them with ``jitgrad.save``, copy them to keep a snapshot."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> _IncompatibleKeys:
        """Copies the values of ``state_dict`` into the parameters and buffers (in place, under
        ``no_grad``). Shape mismatches are always errors; with ``strict``, so are missing and unexpected
        keys (reported in the result either way). All problems are reported together, in PyTorch's words."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        for prefix, module in self._prefixed_modules():
            module._load_from_state_dict(state_dict, prefix, missing, unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, f"Unexpected key(s) in state_dict: {_quoted(unexpected)}. ")
            if missing:
                errors.insert(0, f"Missing key(s) in state_dict: {_quoted(missing)}. ")
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _prefixed_modules(self) -> Iterator[tuple[str, "Module"]]:
        for name, module in self.named_modules(remove_duplicate=False):  # every path state_dict() names
            yield (name + "." if name else ""), module

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str, missing_keys: list[str],
                              unexpected_keys: list[str], error_msgs: list[str]) -> None:
        """Loads this module's own parameters and persistent buffers from the keys under ``prefix``,
        and notes the keys under ``prefix`` that nothing here or in a child would take. Overridden by
        modules that accept older layouts (BatchNorm without ``num_batches_tracked``)."""
        local = {name: t for name, t in self._parameters.items() if t is not None}
        local.update((name, t) for name, t in self._buffers.items()
                     if t is not None and name not in self._non_persistent_buffers_set)
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected jitgrad.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
            elif value.shape != target.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {target.shape}.")
            else:
                try:
                    with no_grad():
                        target.copy_(value)
                except RuntimeError as error:
                    error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model '
                                      f"are {target.shape} and whose dimensions in the checkpoint are "
                                      f"{value.shape}, an exception occurred : {error.args}.")
        for key in state_dict:
            if key.startswith(prefix):
                head = key[len(prefix):].split(".", 1)[0]
                if head not in self._modules and head not in local:
                    unexpected_keys.append(key)

    # ---- printing -----------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text between the parentheses of this module's repr (its settings); '' by default."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _indent(repr(module), 2) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        elif lines:
            text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


__all__ = ["Module", "clear_grads"]
