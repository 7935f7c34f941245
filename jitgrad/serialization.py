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
from .tensor import Tensor

FORMAT = "jitgrad.save"
VERSION = 1
STRUCTURE = "structure.json"
MAX_STRUCTURE_BYTES = 256 * 2 ** 20
_TENSOR_MEMBER = re.compile(r"tensors/(0|[1-9][0-9]*)\.npy")
_CONTAINERS = ("list", "tuple", "dict", "ordered_dict")

FileLike = str | os.PathLike | IO[bytes]


class SerializationError(RuntimeError):
    """A file ``jitgrad.load`` cannot read: not written by ``jitgrad.save``, damaged or hostile."""


# ---- saving ---------------------------------------------------------------------------------------------
class _Writer:
    """Turns an object into JSON nodes, collecting each distinct tensor's array once."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.index_of: dict[int, int] = {}
        self.open_containers: set[int] = set()

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
        if id(value) not in self.index_of:
            self.index_of[id(value)] = len(self.arrays)
            self.arrays.append(value.detach().cpu().numpy())
        node = {"type": "tensor", "index": self.index_of[id(value)], "requires_grad": value.requires_grad,
                "parameter": isinstance(value, Parameter)}
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


def _write_archive(target: BinaryIO, structure: bytes, arrays: list[np.ndarray]) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(STRUCTURE, structure)
        for index, array in enumerate(arrays):
            with archive.open(f"tensors/{index}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def save(obj: Any, f: FileLike) -> None:
    """Writes ``obj`` (a tensor, a state dict, or lists, tuples and dicts of tensors, numbers, strings
    and None) to ``f``, a path or a binary file object. A path is written whole or not at all (a
    temporary file in the same folder, renamed into place)."""
    writer = _Writer()
    document = {"format": FORMAT, "version": VERSION, "object": writer.node(obj, "obj")}
    structure = json.dumps(document).encode("utf-8")
    if not isinstance(f, (str, os.PathLike)):
        _write_archive(f, structure, writer.arrays)
        return
    path = os.fspath(f)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".jitgrad-save-")
    try:
        with os.fdopen(handle, "wb") as file:
            _write_archive(file, structure, writer.arrays)
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

    def tensor(self, node: dict[str, Any], where: str) -> Tensor:
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
            if node["parameter"]:
                tensor = Parameter(tensor, node["requires_grad"])
            elif node["requires_grad"]:
                tensor.requires_grad_(True)
            self.tensors[index] = tensor
        return self.tensors[index]

    def array(self, index: int) -> np.ndarray:
        member = f"tensors/{index}.npy"
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
