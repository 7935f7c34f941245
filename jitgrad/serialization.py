"""``jitgrad.save`` and ``jitgrad.load``: tensors, state dicts and nested containers in a file that
loading can never turn into running code.

PyTorch's ``torch.save`` pickles, and unpickling a hostile file runs whatever it says. A jitgrad file
is a zip archive (numpy's ``.npz`` layout) of plain data only:

- ``structure.json``: ``{"format": "jitgrad.save", "version": 1, "object": node}``, where a node is
  JSON's ``null``, a bool, a number or a string, or ``{"type": "tensor", "index": i, "requires_grad":
  bool, "parameter": bool}`` (with ``"device": "cuda:0"`` for a CUDA tensor, whose values are stored
  as a host copy), ``{"type": "list" | "tuple", "items": [node, ...]}`` or ``{"type":
  "dict" | "ordered_dict", "items": [[key, node], ...]}`` (keys are nodes too, so ``{0: ...}`` stays
  an int key, as an optimizer's state needs);
- ``tensors/<i>.npy``: tensor ``i``'s array in numpy's format, written and read with
  ``allow_pickle=False``. A tensor held in several places is stored once and loads as one tensor.
- ``storages/<k>.npy``: memory that several saved tensors share (a tensor and its views: ``x``,
  ``x[1]``, ``x.t()``), as bytes (uint8), once; each of those tensors is the node ``{"type": "tensor",
  "view": v, "storage": k, "offset": bytes, "shape": [...], "strides": [bytes, ...], "dtype": "<f4",
  ...}`` (``v`` numbers the tensor, held once however often it appears) and loads as a view of that
  memory, so that writing into one shows in the others, as after ``torch.load``. Numpy checks that
  every view lies inside its storage. A tensor sharing memory with no other saved tensor is stored
  alone (a slice of a big tensor saves the slice).

Loading checks everything before trusting it: the archive's members, the JSON, every node's shape,
every array's header (no object arrays, a dtype jitgrad has, a size the member actually holds), and
reports what is wrong with the file's name in a ``SerializationError``. Gradients, hooks and the
autograd graph are not saved, as with ``torch.save``.

As with PyTorch, a CUDA tensor loads onto the GPU again, unless ``map_location="cpu"`` (or
``jitgrad.device("cpu")``) asks for the CPU; loading it where CUDA is not available is an error that
says to pass that.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import re
import tempfile
import zipfile
import zlib
from collections import OrderedDict
from typing import IO, Any, BinaryIO

import numpy as np

from . import cuda
from .dtypes import from_numpy_dtype
from .factories import from_numpy
from .nn.parameter import Parameter
from .shared_arrays import root_array
from .tensor import Tensor

FORMAT = "jitgrad.save"
VERSION = 1
STRUCTURE = "structure.json"
MAX_STRUCTURE_BYTES = 256 * 2 ** 20
_TENSOR_MEMBER = re.compile(r"(tensors|storages)/(0|[1-9][0-9]*)\.npy")
_CONTAINERS = ("list", "tuple", "dict", "ordered_dict")

FileLike = str | os.PathLike | IO[bytes]


class SerializationError(RuntimeError):
    """A file ``jitgrad.load`` cannot read: not written by ``jitgrad.save``, damaged or hostile."""


# ---- saving ---------------------------------------------------------------------------------------------
def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _byte_bounds(array: np.ndarray) -> tuple[int, int]:
    """The first byte ``array`` reads and the one after its last (its strides may be negative)."""
    low = high = _address(array)
    if array.size == 0:
        return low, high
    for size, stride in zip(array.shape, array.strides):
        low += min(0, stride * (size - 1))
        high += max(0, stride * (size - 1))
    return low, high + array.itemsize


class _SharedMemory:
    """The CPU tensors of an object that share memory with another of its tensors, found before
    writing (``tensors(obj)``): each group's span of bytes becomes one storage."""

    def __init__(self, tensors: list[Tensor]) -> None:
        groups: dict[int, list[tuple[Tensor, np.ndarray]]] = {}
        roots: dict[int, np.ndarray] = {}   # kept alive, so that no id is reused while grouping
        for tensor in {id(t): t for t in tensors if not t.is_cuda}.values():
            array = tensor.detach().numpy()
            root = root_array(array)
            if root.size == 0 or not (root.flags.c_contiguous or root.flags.f_contiguous):
                continue   # no flat run of bytes to store: saved alone
            roots[id(root)] = root
            groups.setdefault(id(root), []).append((tensor, array))
        # id(tensor) -> (its view number, its storage, the storage's first byte, its array)
        self.view_of: dict[int, tuple[int, int, int, np.ndarray]] = {}
        self.storages: list[np.ndarray] = []
        for key, members in groups.items():
            if len(members) < 2:
                continue
            root = roots[key]
            low = min(_byte_bounds(a)[0] for _, a in members)
            high = max(_byte_bounds(a)[1] for _, a in members)
            start = low - _byte_bounds(root)[0]
            self.storages.append(root.ravel(order="K").view(np.uint8)[start:start + high - low])
            for tensor, array in members:
                self.view_of[id(tensor)] = (len(self.view_of), len(self.storages) - 1, low, array)


def _tensors(value: Any, found: list[Tensor], open_containers: set[int]) -> None:
    if isinstance(value, Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple, dict)) and id(value) not in open_containers:
        open_containers.add(id(value))
        for item in (value.values() if isinstance(value, dict) else value):
            _tensors(item, found, open_containers)
        open_containers.discard(id(value))


class _Writer:
    """Turns an object into JSON nodes, collecting each distinct tensor's array once, and the memory
    several tensors share once (``_SharedMemory``)."""

    def __init__(self, obj: Any) -> None:
        self.arrays: list[np.ndarray] = []
        self.index_of: dict[int, int] = {}
        self.open_containers: set[int] = set()
        found: list[Tensor] = []
        _tensors(obj, found, set())
        self.shared = _SharedMemory(found)

    def node(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, Tensor):
            return self.tensor(value)
        if isinstance(value, (list, tuple, dict)):
            if id(value) in self.open_containers:
                raise ValueError(f"jitgrad.save: {where} contains itself")
            self.open_containers.add(id(value))
            try:
                return self.container(value, where)
            finally:
                self.open_containers.discard(id(value))
        raise TypeError(f"jitgrad.save: cannot save {type(value).__name__} at {where}: only tensors, numbers, "
                        "strings, None and lists, tuples and dicts of them are saved (nothing is pickled); save "
                        "a model's or an optimizer's state_dict()")

    def tensor(self, value: Tensor) -> dict[str, Any]:
        flags = {"requires_grad": value.requires_grad, "parameter": isinstance(value, Parameter)}
        if id(value) in self.shared.view_of:
            view, storage, low, array = self.shared.view_of[id(value)]
            return {"type": "tensor", "view": view, "storage": storage, "offset": _address(array) - low,
                    "shape": list(array.shape), "strides": list(array.strides), "dtype": array.dtype.str, **flags}
        if id(value) not in self.index_of:
            self.index_of[id(value)] = len(self.arrays)
            self.arrays.append(value.detach().cpu().numpy())
        node = {"type": "tensor", "index": self.index_of[id(value)], **flags}
        if value.is_cuda:
            node["device"] = str(value.device)
        return node

    def container(self, value: list | tuple | dict, where: str) -> dict[str, Any]:
        if isinstance(value, dict):
            items = []
            for key, item in value.items():
                if not (key is None or isinstance(key, (bool, str, numbers.Real))):
                    raise TypeError(f"jitgrad.save: cannot save the key {key!r} of {where}: dict keys must be "
                                    "strings, numbers, bools or None")
                items.append([self.node(key, where), self.node(item, f"{where}[{key!r}]")])
            return {"type": "ordered_dict" if isinstance(value, OrderedDict) else "dict", "items": items}
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {"type": kind, "items": [self.node(item, f"{where}[{i}]") for i, item in enumerate(value)]}


def _write_archive(target: BinaryIO, structure: bytes, arrays: list[np.ndarray], storages: list[np.ndarray]) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(STRUCTURE, structure)
        for folder, members in (("tensors", arrays), ("storages", storages)):
            for index, array in enumerate(members):
                with archive.open(f"{folder}/{index}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)


def save(obj: Any, f: FileLike) -> None:
    """Writes ``obj`` (a tensor, a state dict, or lists, tuples and dicts of tensors, numbers, strings
    and None) to ``f``, a path or a binary file object. A path is written whole or not at all (a
    temporary file in the same folder, renamed into place)."""
    writer = _Writer(obj)
    document = {"format": FORMAT, "version": VERSION, "object": writer.node(obj, "obj")}
    structure = json.dumps(document).encode("utf-8")
    if not isinstance(f, (str, os.PathLike)):
        _write_archive(f, structure, writer.arrays, writer.shared.storages)
        return
    path = os.fspath(f)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".jitgrad-save-")
    try:
        with os.fdopen(handle, "wb") as file:
            _write_archive(file, structure, writer.arrays, writer.shared.storages)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


# ---- loading --------------------------------------------------------------------------------------------
class _Reader:
    """Reads nodes back, checking each; ``fail(reason)`` raises the error that names the file."""

    def __init__(self, archive: zipfile.ZipFile, name: str, to_cpu: bool = False) -> None:
        self.to_cpu = to_cpu
        self.archive, self.name = archive, name
        self.members = {info.filename: info for info in archive.infolist()}
        self.tensors: dict[int, Tensor] = {}
        self.storages: dict[int, np.ndarray] = {}
        self.views: dict[int, Tensor] = {}

    def fail(self, reason: str) -> SerializationError:
        return SerializationError(f"jitgrad.load({self.name}): {reason}")

    def check_members(self) -> None:
        if len(self.members) != len(self.archive.infolist()):
            raise self.fail("the archive holds a member twice")
        if STRUCTURE not in self.members:
            raise self.fail(f"the archive has no {STRUCTURE}, so jitgrad.save did not write it (a file of "
                            "torch.save is a pickle, which jitgrad never loads)")
        for member in self.members:
            if member != STRUCTURE and not _TENSOR_MEMBER.fullmatch(member):
                raise self.fail(f"the archive holds an unexpected member {member!r}")

    def document(self) -> Any:
        info = self.members[STRUCTURE]
        if info.file_size > MAX_STRUCTURE_BYTES:
            raise self.fail(f"{STRUCTURE} is {info.file_size} bytes, more than the {MAX_STRUCTURE_BYTES} allowed")
        try:
            document = json.loads(self.archive.read(STRUCTURE).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise self.fail(f"{STRUCTURE} is not valid JSON ({error})") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT or "object" not in document:
            raise self.fail(f"{STRUCTURE} does not describe a jitgrad.save file (no \"format\": \"{FORMAT}\" "
                            "and \"object\")")
        if document.get("version") != VERSION:
            raise self.fail(f"format version {document.get('version')!r} is not {VERSION}, the one this "
                            "jitgrad reads")
        return document["object"]

    def node(self, node: Any, where: str) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise self.fail(f"{STRUCTURE}: {where} is {type(node).__name__}, not a value or a typed node")
        kind = node["type"]
        if kind == "tensor":
            return self.tensor(node, where)
        if kind not in _CONTAINERS:
            raise self.fail(f"{STRUCTURE}: {where} has the unknown type {kind!r}")
        if set(node) != {"type", "items"} or not isinstance(node["items"], list):
            raise self.fail(f"{STRUCTURE}: {where} ({kind}) must have exactly \"type\" and a list of \"items\"")
        if kind in ("list", "tuple"):
            items = [self.node(item, f"{where}[{i}]") for i, item in enumerate(node["items"])]
            return items if kind == "list" else tuple(items)
        result: dict[Any, Any] = OrderedDict() if kind == "ordered_dict" else {}
        for i, pair in enumerate(node["items"]):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise self.fail(f"{STRUCTURE}: item {i} of {where} is not a [key, value] pair")
            key = pair[0]
            if not (key is None or isinstance(key, (bool, int, float, str))):
                raise self.fail(f"{STRUCTURE}: key {i} of {where} is {type(key).__name__}, not a plain value")
            result[key] = self.node(pair[1], f"{where}[{key!r}]")
        return result

    def view(self, node: dict[str, Any], where: str) -> np.ndarray:
        """The array of a tensor node that views a storage, checked: numpy refuses a view that
        reaches outside its storage."""
        if set(node) != {"type", "view", "storage", "offset", "shape", "strides", "dtype", "requires_grad",
                         "parameter"} or type(node["view"]) is not int \
                or type(node["storage"]) is not int or type(node["offset"]) is not int \
                or not isinstance(node["shape"], list) or not isinstance(node["strides"], list) \
                or len(node["shape"]) != len(node["strides"]) \
                or not all(type(n) is int and n >= 0 for n in node["shape"]) \
                or not all(type(n) is int for n in node["strides"]) or not isinstance(node["dtype"], str) \
                or not isinstance(node["requires_grad"], bool) or not isinstance(node["parameter"], bool):
            raise self.fail(f"{STRUCTURE}: {where} is a malformed view node (it needs ints \"view\", \"storage\" "
                            "and \"offset\", lists of ints \"shape\" and \"strides\", a \"dtype\" string and bools "
                            "\"requires_grad\" and \"parameter\")")
        try:
            dtype = np.dtype(node["dtype"])
            from_numpy_dtype(dtype)
            if dtype.str != node["dtype"]:   # only numpy's own spelling ("<f4"), as save writes it
                raise TypeError
        except (TypeError, ValueError):
            raise self.fail(f"{STRUCTURE}: {where} has the dtype {node['dtype']!r}, not one jitgrad has") from None
        index = node["storage"]
        if index not in self.storages:
            storage = self.array(index, "storages")
            if storage.dtype != np.uint8 or storage.ndim != 1:
                raise self.fail(f"storages/{index}.npy holds {storage.dtype} of shape {storage.shape}, not bytes")
            self.storages[index] = storage
        try:
            return np.ndarray(tuple(node["shape"]), dtype, buffer=self.storages[index], offset=node["offset"],
                              strides=tuple(node["strides"]))
        except (TypeError, ValueError) as error:
            raise self.fail(f"{STRUCTURE}: {where} does not fit in storage {index} ({error})") from None

    def tensor(self, node: dict[str, Any], where: str) -> Tensor:
        if "storage" in node:
            key = node.get("view")
            if key not in self.views:   # a tensor held twice loads as one tensor
                data = self.view(node, where)
                if node["requires_grad"] and data.dtype.kind != "f":
                    raise self.fail(f"{STRUCTURE}: {where} requires grad but its array is {data.dtype}")
                self.views[key] = self._finish(from_numpy(data), node)
            return self.views[key]
        index = node.get("index")
        place = node.get("device", "cpu")
        if set(node) - {"device"} != {"type", "index", "requires_grad", "parameter"} or type(index) is not int \
                or not isinstance(node["requires_grad"], bool) or not isinstance(node["parameter"], bool):
            raise self.fail(f"{STRUCTURE}: {where} is a malformed tensor node (it needs an int \"index\" and "
                            "bools \"requires_grad\" and \"parameter\")")
        if place not in ("cpu", "cuda:0"):
            raise self.fail(f"{STRUCTURE}: {where} has the unknown device {place!r}")
        if index not in self.tensors:
            data = self.array(index)
            if node["requires_grad"] and data.dtype.kind != "f":
                raise self.fail(f"{STRUCTURE}: {where} requires grad but its array is {data.dtype}")
            tensor = from_numpy(data)
            if place != "cpu" and not self.to_cpu:
                if not cuda.is_available():
                    raise RuntimeError(f"jitgrad.load({self.name}): {where} was saved from a CUDA device, but CUDA "
                                       "is not available; pass map_location='cpu' to load it on the CPU")
                tensor = tensor.to(place)
            self.tensors[index] = self._finish(tensor, node)
        return self.tensors[index]

    @staticmethod
    def _finish(tensor: Tensor, node: dict[str, Any]) -> Tensor:
        if node["parameter"]:
            return Parameter(tensor, node["requires_grad"])
        if node["requires_grad"]:
            tensor.requires_grad_(True)
        return tensor

    def array(self, index: int, folder: str = "tensors") -> np.ndarray:
        member = f"{folder}/{index}.npy"
        info = self.members.get(member)
        if info is None:
            raise self.fail(f"{STRUCTURE} refers to tensor {index}, but the archive has no {member}")
        with self.archive.open(info) as file:
            try:
                version = np.lib.format.read_magic(file)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                               (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read_header is None:
                    raise ValueError(f"npy format version {version} is not 1.0 or 2.0")
                shape, fortran_order, dtype = read_header(file)
            except ValueError as error:
                raise self.fail(f"{member} is not a valid .npy array ({error})") from None
            if dtype.hasobject:
                raise self.fail(f"{member} holds Python objects (an object array): jitgrad never unpickles")
            try:
                from_numpy_dtype(dtype)
            except TypeError:
                raise self.fail(f"{member} holds {dtype}, a dtype jitgrad does not have") from None
            size = math.prod(shape) * dtype.itemsize
            if size > info.file_size:
                raise self.fail(f"{member} declares {shape} of {dtype} ({size} bytes) but holds {info.file_size}")
            data = file.read(size + 1)
        if len(data) != size:
            raise self.fail(f"{member} holds {len(data)} bytes of data where {shape} of {dtype} needs {size} "
                            "(the file is truncated or damaged)")
        return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran_order else "C").copy()


def load(f: FileLike, map_location: str | None = None, *, weights_only: bool = True) -> Any:
    """Reads what ``save`` wrote to ``f`` (a path or a binary file object). A CUDA tensor loads onto the
    GPU, as it was saved, unless ``map_location`` is "cpu" (None keeps the saved devices).
    ``weights_only`` is taken for PyTorch's signature: jitgrad files hold data only, so every load is a
    weights-only load. Anything wrong with the file raises ``SerializationError`` naming the file and
    the problem; a missing file is the usual ``FileNotFoundError``."""
    if map_location is not None and map_location != "cpu":
        raise ValueError(f"jitgrad.load: map_location={map_location!r}: give 'cpu', or None to load tensors "
                         "on the devices they were saved from")
    to_cpu = map_location is not None
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as file:
            return _load(file, repr(os.fspath(f)), to_cpu)
    return _load(f, "<file object>", to_cpu)


def _load(file: BinaryIO, name: str, to_cpu: bool = False) -> Any:
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as error:
        raise SerializationError(f"jitgrad.load({name}): not a complete zip archive ({error}); jitgrad.save writes "
                                 "a zip of .npy arrays and structure.json: the file is truncated, damaged, or "
                                 "another kind of file") from None
    with archive:
        reader = _Reader(archive, name, to_cpu)
        try:
            reader.check_members()
            return reader.node(reader.document(), "obj")
        except SerializationError:
            raise
        except RecursionError:
            raise reader.fail(f"{STRUCTURE} nests too deeply") from None
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, zlib.error) as error:
            raise reader.fail(f"a member cannot be read ({type(error).__name__}: {error}): the file is "
                              "truncated or damaged") from None


__all__ = ["SerializationError", "load", "save"]
