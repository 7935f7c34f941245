"""``Module``: registration, walking, modes, dtypes, hooks, state dicts and repr, against PyTorch
where PyTorch is installed (its repr strings and error messages, the library's name aside)."""
from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg
import jitgrad.nn as nn


def block(lib):
    """A model as users write one: a parameter, two buffers, a child and the same child again."""
    class Block(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = lib.nn.Parameter(lib.ones(3))
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.inner = lib.nn.Linear(3, 3)
            self.again = self.inner
    return Block()


def test_attributes_register_parameters_buffers_and_children():
    model = block(jg)
    assert [name for name, _ in model.named_parameters()] == ["scale", "inner.weight", "inner.bias"]
    assert len(list(model.named_parameters(remove_duplicate=False))) == 5  # the shared child twice
    assert [name for name, _ in model.named_buffers()] == ["count", "scratch"]
    assert [name for name, _ in model.named_children()] == ["inner"]
    assert [name for name, _ in model.named_modules()] == ["", "inner"]
    assert [name for name, _ in model.named_modules(remove_duplicate=False)] == ["", "inner", "again"]
    assert list(model.state_dict()) == ["scale", "count", "inner.weight", "inner.bias", "again.weight", "again.bias"]
    assert all(isinstance(p, nn.Parameter) for p in model.parameters())
    assert [name for name, _ in model.named_parameters(recurse=False)] == ["scale"]


@needs_torch
def test_state_dict_keys_are_pytorchs():
    def make(lib):
        return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3), lib.nn.LayerNorm(3),
                                 lib.nn.Embedding(4, 3), lib.nn.LSTM(3, 2, num_layers=2, bidirectional=True),
                                 lib.nn.GRUCell(2, 2), lib.nn.CrossEntropyLoss(weight=lib.ones(3)))
    assert list(make(jg).state_dict()) == list(make(torch).state_dict())
    assert list(block(jg).state_dict()) == list(block(torch).state_dict())


def test_plain_tensors_and_values_stay_plain_attributes():
    model = nn.Module()
    model.cache = jg.ones(2)
    model.rate = 0.5
    assert list(model.parameters()) == [] and list(model.buffers()) == []
    assert model.cache.shape == (2,) and model.rate == 0.5
    model.weight = nn.Parameter(jg.ones(1))
    del model.weight
    assert list(model.parameters()) == []
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'weight'"):
        model.weight


MISUSES = {
    "buffer-name-type": lambda L, m: m.register_buffer(1, None),
    "buffer-name-dot": lambda L, m: m.register_buffer("a.b", None),
    "buffer-name-empty": lambda L, m: m.register_buffer("", None),
    "buffer-name-taken": lambda L, m: m.register_buffer("weight", None),
    "buffer-not-tensor": lambda L, m: m.register_buffer("x", 5),
    "parameter-not-parameter": lambda L, m: m.register_parameter("x", L.ones(1)),
    "parameter-name-dot": lambda L, m: m.register_parameter("a.b", None),
    "parameter-name-taken": lambda L, m: m.register_parameter("training", None),
    "module-not-module": lambda L, m: m.add_module("x", 5),
    "module-name-dot": lambda L, m: m.add_module("a.b", L.nn.ReLU()),
    "module-name-type": lambda L, m: m.add_module(3, L.nn.ReLU()),
    "assign-tensor-to-parameter": lambda L, m: setattr(m, "weight", L.ones(3, 2)),
    "assign-number-to-parameter": lambda L, m: setattr(m, "weight", 3),
    "missing-attribute": lambda L, m: m.foo,
    "no-forward": lambda L, m: L.nn.Module()(1),
    "to-integer-dtype": lambda L, m: m.to(L.int64),
    "train-not-bool": lambda L, m: m.train("yes"),
}


def _normalized(message: str) -> str:
    for theirs, ours in (("torch.FloatTensor", "jitgrad.Tensor"), ("torch.nn.Buffer, torch.Tensor", "jitgrad.Tensor"),
                         ("torch Tensor", "jitgrad.Tensor"), ("torch.", "jitgrad.")):
        message = message.replace(theirs, ours)
    return message


@needs_torch
@pytest.mark.parametrize("name", MISUSES)
def test_misuse_raises_pytorchs_error(name):
    misuse = MISUSES[name]
    with pytest.raises(Exception) as theirs:
        misuse(torch, torch.nn.Linear(2, 3))
    with pytest.raises(type(theirs.value)) as ours:
        misuse(jg, nn.Linear(2, 3))
    assert _normalized(str(ours.value)) == _normalized(str(theirs.value))


@needs_torch
@pytest.mark.parametrize("kind", ["parameter", "module", "buffer"])
def test_assigning_before_init_is_pytorchs_error(kind):
    def assign(lib):
        class Early(lib.nn.Module):
            def __init__(self):
                if kind == "parameter":
                    self.x = lib.nn.Parameter(lib.ones(1))
                elif kind == "module":
                    self.x = lib.nn.ReLU()
                else:
                    self.register_buffer("x", None)
        Early()
    with pytest.raises(AttributeError) as theirs:
        assign(torch)
    with pytest.raises(AttributeError, match=str(theirs.value).replace("(", r"\(").replace(")", r"\)")):
        assign(jg)


def test_train_eval_reach_every_module():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2)))
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_zero_grad_to_none_or_to_zeros():
    model = nn.Linear(2, 1)
    model(jg.ones(3, 2)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_requires_grad_and_apply():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())
    visited = []
    model.apply(lambda m: visited.append(type(m).__name__))
    assert visited == ["Linear", "ReLU", "Linear", "Sequential"]  # children first, as PyTorch


def test_to_dtype_casts_floating_state_in_place():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    weight = model[0].weight
    model(jg.ones(3, 2)).sum().backward()
    assert model.to(jg.float64) is model
    assert model[0].weight is weight and weight.dtype == jg.float64 and weight.grad.dtype == jg.float64
    assert model[1].running_mean.dtype == jg.float64
    assert model[1].num_batches_tracked.dtype == jg.int64  # integer buffers keep their dtype
    assert model.float()[0].weight.dtype == jg.float32
    assert model.to("cpu", jg.float64)[0].bias.dtype == jg.float64
    if not jg.cuda.is_available():  # tests/cuda moves models to the GPU
        with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
            model.to("cuda")


class Doubler(nn.Module):
    def forward(self, x, scale=1.0):
        return x * 2 * scale


def test_forward_hooks_and_pre_hooks():
    module = Doubler()
    calls = []
    first = module.register_forward_pre_hook(lambda m, args: (args[0] + 1,))
    module.register_forward_pre_hook(lambda m, args: calls.append("prepended"), prepend=True)
    module.register_forward_hook(lambda m, args, out: out * 10)
    module.register_forward_hook(lambda m, args, kwargs, out: calls.append(kwargs) or None, with_kwargs=True)
    assert module(jg.tensor(1.0), scale=0.5).item() == 20.0   # ((1 + 1) * 2 * 0.5) * 10
    assert calls == ["prepended", {"scale": 0.5}]
    first.remove()
    assert module(jg.tensor(1.0)).item() == 20.0
    module.register_forward_pre_hook(lambda m, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    assert module(jg.tensor(1.0)).item() == 60.0


def test_load_state_dict_copies_in_place():
    source, target = nn.Linear(2, 3), nn.Linear(2, 3)
    weight = target.weight
    result = target.load_state_dict(source.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert target.weight is weight
    np.testing.assert_array_equal(target.weight.detach().numpy(), source.weight.detach().numpy())
    target.weight.detach().add_(1)
    assert not np.array_equal(target.weight.detach().numpy(), source.weight.detach().numpy())


def test_batchnorm_loads_a_state_dict_without_its_batch_count():
    bn = nn.BatchNorm1d(2)
    state = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    assert repr(bn.load_state_dict(state)) == "<All keys matched successfully>"


STATE_DICT_CASES = {
    "missing": ({"weight": np.zeros((3, 2))}, True),
    "unexpected": ({"weight": np.zeros((3, 2)), "bias": np.zeros(3), "foo": np.zeros(1)}, True),
    "sizes": ({"weight": np.zeros((2, 2)), "bias": np.zeros(4)}, True),
    "all-three": ({"weight": np.zeros((2, 2)), "foo": np.zeros(1)}, True),
    "not-strict": ({"weight": np.zeros((3, 2)), "foo": np.zeros(1)}, False),
    "not-a-tensor": ({"weight": 5, "bias": np.zeros(3)}, True),
}


@needs_torch
@pytest.mark.parametrize("name", STATE_DICT_CASES)
def test_load_state_dict_reports_as_pytorch(name):
    state, strict = STATE_DICT_CASES[name]

    def load(lib):
        model = lib.nn.Linear(2, 3)
        values = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in state.items()}
        try:
            return repr(model.load_state_dict(values, strict=strict))
        except Exception as error:  # noqa: BLE001 - the message is what is compared
            return f"{type(error).__name__}: {error}"
    expected = load(torch).replace("torch.Size", "jitgrad.Size").replace("torch.Tensor", "jitgrad.Tensor")
    assert load(jg) == expected


@needs_torch
def test_nested_load_state_dict_reports_as_pytorch():
    def load(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2), lib.nn.ReLU())
        with pytest.raises(RuntimeError) as error:
            model.load_state_dict({"0.weight": lib.zeros(2, 2), "2.weight": lib.zeros(1), "3.x": lib.zeros(1)})
        return str(error.value)
    assert load(jg) == load(torch)


def _layers(lib):
    n = lib.nn

    class Net(n.Module):
        def __init__(self):
            super().__init__()
            self.layers = n.ModuleList([n.Linear(2, 2) for _ in range(3)] + [n.ReLU()])
            self.heads = n.ModuleDict({"a": n.Linear(2, 1), "b": n.Sequential(n.Tanh(), n.Identity())})
            self.cell = n.LSTMCell(2, 3, bias=False)

        def extra_repr(self):
            return "depth=3\nwidth=2"

    return [
        n.Sequential(n.Linear(2, 3), n.ReLU(), n.Dropout(0.1), n.LayerNorm(3), n.BatchNorm1d(3),
                     n.Embedding(10, 3, padding_idx=0), n.GELU(), n.Softmax(dim=1), n.LogSoftmax(dim=-1),
                     n.Flatten(), n.Identity(), n.Tanh(), n.Sigmoid()),
        Net(), n.ModuleList(), n.Sequential(), n.Module(), n.ReLU(inplace=True), n.GELU("tanh"),
        n.Linear(2, 3, bias=False), n.LayerNorm((3, 4), elementwise_affine=False), n.LayerNorm(3, bias=False),
        n.BatchNorm1d(3, momentum=None, affine=False, track_running_stats=False), n.BatchNorm1d(3, bias=False),
        n.RNNCell(2, 3), n.RNNCell(2, 3, nonlinearity="relu"), n.GRUCell(2, 3), n.LSTMCell(2, 3, bias=False),
        n.RNN(2, 3, num_layers=2, batch_first=True, nonlinearity="relu"), n.GRU(2, 3, bias=False, dropout=0.5,
                                                                              num_layers=2),
        n.LSTM(2, 3, bidirectional=True), n.CrossEntropyLoss(label_smoothing=0.1), n.MSELoss(), n.BCELoss(),
        n.BCEWithLogitsLoss(), n.NLLLoss(), n.Embedding(4, 2),
    ]


@needs_torch
def test_repr_is_pytorchs():
    for ours, theirs in zip(_layers(jg), _layers(torch)):
        assert repr(ours) == repr(theirs)
    assert repr(nn.Parameter(jg.ones(2))) == repr(torch.nn.Parameter(torch.ones(2)))


def test_parameter_shares_memory_and_is_a_leaf():
    data = jg.ones(3)
    param = nn.Parameter(data)
    assert param.requires_grad and param.is_leaf
    data.add_(1)
    assert param.tolist() == [2.0, 2.0, 2.0]
    assert type(param * 2) is jg.Tensor and type(param.detach()) is jg.Tensor and type(param.data) is jg.Tensor
    assert not nn.Parameter(jg.ones(1), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_deepcopy_copies_parameters():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    clone = copy.deepcopy(model)
    assert isinstance(clone[0].weight, nn.Parameter)
    with jg.no_grad():
        clone[0].weight.add_(1)
    assert not np.array_equal(clone[0].weight.detach().numpy(), model[0].weight.detach().numpy())


def test_sequential_and_module_list_keep_numbering():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    assert isinstance(seq[-1], nn.Sigmoid) and len(seq) == 3
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    del seq[0]
    assert list(seq._modules) == ["0", "1"]
    seq.insert(0, nn.GELU())
    seq.append(nn.Identity())
    assert [type(m).__name__ for m in seq] == ["GELU", "Tanh", "Sigmoid", "Identity"]
    assert len(seq + nn.Sequential(nn.ReLU())) == 5
    named = nn.Sequential(OrderedDict([("first", nn.Linear(1, 1))]))
    assert list(named.state_dict()) == ["first.weight", "first.bias"]
    layers = nn.ModuleList([nn.Linear(1, 1)])
    layers += [nn.ReLU()]
    layers[0] = nn.Tanh()
    assert [type(m).__name__ for m in layers] == ["Tanh", "ReLU"] and isinstance(layers[:1], nn.ModuleList)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        layers[5]
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        layers.append(3)


def test_module_dict():
    heads = nn.ModuleDict({"a": nn.Linear(1, 1)})
    heads["b"] = nn.ReLU()
    heads.update([("c", nn.Tanh())])
    assert list(heads) == ["a", "b", "c"] and "b" in heads and len(heads) == 3
    assert isinstance(heads.pop("b"), nn.ReLU) and list(heads.keys()) == ["a", "c"]
    assert [name for name, _ in heads.named_parameters()] == ["a.weight", "a.bias"]


@needs_torch
def test_parameter_containers_register_their_parameters_as_pytorchs():
    """Tensors put in a ParameterList or ParameterDict become the owner's parameters (converted to
    ``Parameter``), named by index or key, so that a PyTorch state dict loads and an optimizer steps them."""
    def make(lib):
        owner = lib.nn.Module()
        owner.weights = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2)), lib.zeros(3, 2)])
        owner.weights.append(lib.full((4,), 2.0))
        owner.heads = lib.nn.ParameterDict({"a": lib.ones(2)})
        owner.heads["b"] = lib.nn.Parameter(lib.ones(1))
        return owner
    ours, theirs = make(jg), make(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in ours.parameters())
    ours.load_state_dict({k: jg.tensor(v.numpy() + 1) for k, v in theirs.state_dict().items()})
    assert ours.weights[2].tolist() == [3.0] * 4 and ours.heads["a"].tolist() == [2.0, 2.0]
    assert len(ours.weights) == 3 and list(ours.heads) == ["a", "b"] and "b" in ours.heads
    assert isinstance(ours.weights[1:], nn.ParameterList) and len(ours.weights[1:]) == 2
    assert ours.heads.pop("b").shape == (1,) and [n for n, _ in ours.named_parameters()][-1] == "heads.a"
    assert "(1): Parameter containing: [jitgrad.float32 of size 3x2]" in repr(ours)


def test_get_submodule():
    model = nn.Sequential(nn.Sequential(nn.Linear(1, 1)))
    assert isinstance(model.get_submodule("0.0"), nn.Linear) and model.get_submodule("") is model
    with pytest.raises(AttributeError):
        model.get_submodule("0.1")


def test_get_parameter_and_get_buffer_take_dotted_paths():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert model.get_parameter("0.weight") is model[0].weight
    assert model.get_buffer("1.running_mean") is model[1].running_mean
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        model.get_parameter("1.running_mean")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        model.get_buffer("0.weight")
    with pytest.raises(AttributeError, match="Linear has no attribute `foo`"):
        model.get_parameter("0.foo")


def test_a_parameter_or_child_assigned_anew_keeps_its_place():
    """PyTorch replaces a parameter (or child) where it stands; jitgrad once moved it to the end, so
    ``parameters()`` and ``state_dict()`` (and an optimizer's state, numbered by them) changed order."""
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[1].weight = model[0].weight
    model[0] = nn.Linear(2, 2)
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert [name for name, _ in model.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]


@needs_torch
def test_parameters_to_vector_and_back_are_pytorchs():
    ours, theirs = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    ours.load_state_dict({k: jg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    vector = nn.utils.parameters_to_vector(ours.parameters())
    np.testing.assert_array_equal(vector.detach().numpy(),
                                  torch.nn.utils.parameters_to_vector(theirs.parameters()).detach().numpy())
    (vector * vector).sum().backward()   # differentiable: each parameter gets 2 p
    np.testing.assert_allclose(ours.weight.grad.numpy(), 2 * ours.weight.detach().numpy())
    nn.utils.vector_to_parameters(jg.arange(8.0), ours.parameters())
    torch.nn.utils.vector_to_parameters(torch.arange(8.0), theirs.parameters())
    for a, b in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    with pytest.raises(TypeError, match="expected jitgrad.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], ours.parameters())
