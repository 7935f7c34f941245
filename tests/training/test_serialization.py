"""``jitgrad.save``/``jitgrad.load``: round trips of tensors, state dicts and nested containers, and
files that are damaged or hostile, each refused with an error naming the file and what is wrong,
without running anything (nothing in a jitgrad file is unpickled)."""
from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.optim as optim
from jitgrad.serialization import SerializationError


def test_nested_containers_round_trip(tmp_path):
    shared = jg.tensor([[1.0, 2.0]], dtype=jg.float64)
    obj = {"weights": [shared, shared.T, jg.arange(3), jg.tensor([True, False])], "step": 3, "lr": 0.5,
           "name": "run", "nothing": None, "flags": (True, 1.5, float("inf")), 7: "int key",
           "ordered": OrderedDict(b=1, a=2)}
    path = tmp_path / "obj.pt"
    jg.save(obj, path)
    back = jg.load(path)
    assert back["step"] == 3 and back["lr"] == 0.5 and back["name"] == "run" and back["nothing"] is None
    assert back["flags"] == (True, 1.5, float("inf")) and back[7] == "int key"
    assert isinstance(back["ordered"], OrderedDict) and list(back["ordered"]) == ["b", "a"]
    first, transposed, integers, flags = back["weights"]
    assert first.dtype == jg.float64 and first.tolist() == [[1.0, 2.0]] and transposed.tolist() == [[1.0], [2.0]]
    assert integers.dtype == jg.int64 and flags.dtype == jg.bool
    jg.save([shared, shared], path)
    again = jg.load(path)
    assert again[0] is again[1]  # one tensor saved once, loaded once


def test_views_keep_sharing_memory_after_loading(tmp_path):
    """A tensor and its views load as views of one memory, as after torch.load: a write into one
    shows in the others (before 2026-11-28 each loaded as a copy, silently apart). Only the bytes
    the saved tensors span are stored; a tensor that shares with no other saved one is stored alone."""
    base = jg.arange(24.0, dtype=jg.float64).reshape(4, 6)
    obj = {"base": base, "row": base[1], "columns": base[:, 1:5:2], "t": base.t(), "alone": jg.arange(5)[1:3],
           "bytes": (jg.arange(8, dtype=jg.int64) > 3)}
    obj["bytes_view"] = obj["bytes"][2:]
    path = tmp_path / "views.pt"
    jg.save(obj, path)
    back = jg.load(path)
    assert {k: v.tolist() for k, v in back.items()} == {k: v.tolist() for k, v in obj.items()}
    assert back["t"].stride() == obj["t"].stride() and back["columns"].stride() == obj["columns"].stride()
    back["base"][1, 3] = -1.0
    back["t"][5, 3] = -2.0
    back["row"].add_(100.0)
    assert back["columns"].tolist()[1] == [107.0, 99.0] and back["base"][3, 5].item() == -2.0
    assert back["base"].tolist()[1] == back["row"].tolist() and back["t"][:, 1].tolist() == back["row"].tolist()
    back["bytes"][7] = False
    assert back["bytes_view"].tolist() == [False, False, True, True, True, False]
    with zipfile.ZipFile(path) as archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
    assert sizes["tensors/0.npy"] < 200 and len([m for m in sizes if m.startswith("storages/")]) == 2
    weight = nn.Parameter(jg.ones(2, 3))
    jg.save([weight, weight.detach(), weight, weight[0]], path)   # one view held twice, two of one memory
    loaded = jg.load(path)
    assert loaded[0] is loaded[2] and loaded[1] is not loaded[0]
    assert isinstance(loaded[0], nn.Parameter) and not isinstance(loaded[1], nn.Parameter)
    assert loaded[0].requires_grad and not loaded[1].requires_grad
    loaded[1][0, 1] = 5.0
    assert loaded[0][0, 1].item() == 5.0 and loaded[3].tolist() == [1.0, 5.0, 1.0]
    jg.save({"row": base[1], "last": base[3, 4:]}, path)   # a span of the memory: rows 1 to 3, not row 0
    with zipfile.ZipFile(path) as archive:
        assert archive.getinfo("storages/0.npy").file_size == 128 + 18 * 8   # elements 6 to 23 of 24


def test_parameters_and_requires_grad_survive(tmp_path):
    jg.save({"p": nn.Parameter(jg.ones(2)), "leaf": jg.ones(1, requires_grad=True), "plain": jg.ones(1)},
            tmp_path / "p.pt")
    back = jg.load(str(tmp_path / "p.pt"))
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert back["leaf"].requires_grad and not back["plain"].requires_grad


def test_a_model_and_its_optimizer_resume(tmp_path):
    jg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01)
    x, y = jg.randn(8, 3), jg.tensor([0, 1] * 4)

    def step(model, opt):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    for _ in range(3):
        step(model, opt)
    jg.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "checkpoint.pt")
    expected = [step(model, opt) for _ in range(3)]
    checkpoint = jg.load(tmp_path / "checkpoint.pt")
    restored = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    restored.load_state_dict(checkpoint["model"])
    restored_opt = optim.Adam(restored.parameters(), lr=0.5)
    restored_opt.load_state_dict(checkpoint["optimizer"])
    assert [step(restored, restored_opt) for _ in range(3)] == expected


def test_file_objects(tmp_path):
    buffer = io.BytesIO()
    jg.save({"x": jg.ones(2)}, buffer)
    buffer.seek(0)
    assert jg.load(buffer)["x"].tolist() == [1.0, 1.0]
    with pytest.raises(SerializationError, match=r"jitgrad.load\(<file object>\)"):
        jg.load(io.BytesIO(b"not a zip"))


def test_the_archive_is_an_npz_numpy_reads_without_pickle(tmp_path):
    jg.save({"x": jg.arange(4)}, tmp_path / "x.npz")
    with np.load(tmp_path / "x.npz", allow_pickle=False) as archive:
        assert archive.files == ["structure.json", "tensors/0"]
        assert archive["tensors/0"].tolist() == [0, 1, 2, 3]


def test_what_cannot_be_saved_is_refused(tmp_path):
    with pytest.raises(TypeError, match=r"cannot save object at obj\['bad'\]\[1\]"):
        jg.save({"bad": [1, object()]}, tmp_path / "bad.pt")
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        jg.save(loop, tmp_path / "bad.pt")
    with pytest.raises(TypeError, match="dict keys must be"):
        jg.save({(1, 2): 3}, tmp_path / "bad.pt")
    assert os.listdir(tmp_path) == []  # nothing written, no temporary file left


def test_a_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "keep.pt"
    jg.save({"x": jg.ones(1)}, path)
    with pytest.raises(TypeError):
        jg.save({"x": jg.zeros(1), "y": object()}, path)
    assert jg.load(path)["x"].tolist() == [1.0] and os.listdir(tmp_path) == ["keep.pt"]


# ---- damaged and hostile files ---------------------------------------------------------------------------
class Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def archive_with(path, structure, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        if structure is not None:
            text = structure if isinstance(structure, (bytes, str)) else json.dumps(structure)
            archive.writestr("structure.json", text)
        for name, data in members.items():
            archive.writestr(name, data)


def npy(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def tensor_document(index=0, **node) -> dict:
    return {"format": "jitgrad.save", "version": 1,
            "object": {"type": "tensor", "index": index, "requires_grad": False, "parameter": False, **node}}


def view_document(**node) -> dict:
    view = {"type": "tensor", "view": 0, "storage": 0, "offset": 0, "shape": [2], "strides": [8], "dtype": "<f8",
            "requires_grad": False, "parameter": False, **node}
    return {"format": "jitgrad.save", "version": 1, "object": view}


def corrupted(data: bytes) -> bytes:
    """The archive with a byte of the first array's data changed (its CRC no longer matches)."""
    at = data.index(b"\x00\x00\x80\x3f") + 2
    return data[:at] + b"\x81" + data[at + 1:]


OBJECT_ARRAY = np.array([Boom()], dtype=object)

HOSTILE = {
    "a pickle": (lambda p: p.write_bytes(pickle.dumps({"x": Boom()})), "not a complete zip archive"),
    "an empty file": (lambda p: p.write_bytes(b""), "not a complete zip archive"),
    "a truncated archive": (lambda p: (jg.save({"x": jg.ones(100)}, p), p.write_bytes(p.read_bytes()[:300])),
                            "not a complete zip archive"),
    "a corrupted member": (lambda p: (jg.save({"x": jg.ones(100)}, p), p.write_bytes(corrupted(p.read_bytes()))),
                           "a member cannot be read (BadZipFile: Bad CRC-32"),
    "no structure": (lambda p: archive_with(p, None, {"tensors/0.npy": npy(np.ones(2))}), "has no structure.json"),
    "a pickled object array": (lambda p: archive_with(p, tensor_document(), {"tensors/0.npy": npy(OBJECT_ARRAY, True)}),
                               "holds Python objects"),
    "a pickle as a member": (lambda p: archive_with(p, tensor_document(), {"payload.pkl": pickle.dumps(Boom())}),
                             "unexpected member 'payload.pkl'"),
    "a path outside": (lambda p: archive_with(p, tensor_document(), {"../../etc/x.npy": npy(np.ones(1))}),
                       "unexpected member"),
    "invalid JSON": (lambda p: archive_with(p, "{not json", {}), "structure.json is not valid JSON"),
    "JSON of another shape": (lambda p: archive_with(p, [1, 2], {}), "does not describe a jitgrad.save file"),
    "a newer version": (lambda p: archive_with(p, {**tensor_document(), "version": 2}, {}), "format version 2"),
    "an unknown node": (lambda p: archive_with(p, {"format": "jitgrad.save", "version": 1,
                                                   "object": {"type": "pickle", "data": "..."}}, {}),
                        "unknown type 'pickle'"),
    "a missing tensor": (lambda p: archive_with(p, tensor_document(index=3), {}), "refers to tensor 3"),
    "a string index": (lambda p: archive_with(p, tensor_document(index="0"), {"tensors/0.npy": npy(np.ones(1))}),
                       "malformed tensor node"),
    "a bad pair": (lambda p: archive_with(p, {"format": "jitgrad.save", "version": 1,
                                              "object": {"type": "dict", "items": [[1]]}}, {}),
                   "is not a [key, value] pair"),
    "a complex array": (lambda p: archive_with(p, tensor_document(), {"tensors/0.npy": npy(np.ones(2, np.complex128))}),
                        "a dtype jitgrad does not have"),
    "a short array": (lambda p: archive_with(p, tensor_document(), {"tensors/0.npy": npy(np.ones(100))[:200]}),
                      "declares (100,)"),
    "not an array": (lambda p: archive_with(p, tensor_document(), {"tensors/0.npy": b"hello"}),
                     "is not a valid .npy array"),
    "a view outside its storage": (
        lambda p: archive_with(p, view_document(offset=8), {"storages/0.npy": npy(np.zeros(16, np.uint8))}),
        "does not fit in storage 0"),
    "a view with a negative stride outside": (
        lambda p: archive_with(p, view_document(strides=[-8]), {"storages/0.npy": npy(np.zeros(16, np.uint8))}),
        "does not fit in storage 0"),
    "a view of an object dtype": (
        lambda p: archive_with(p, view_document(dtype="|O"), {"storages/0.npy": npy(np.zeros(16, np.uint8))}),
        "not one jitgrad has"),
    "a dtype in another spelling": (
        lambda p: archive_with(p, view_document(dtype="\x00"), {"storages/0.npy": npy(np.zeros(16, np.uint8))}),
        "not one jitgrad has"),
    "a storage that is not bytes": (
        lambda p: archive_with(p, view_document(), {"storages/0.npy": npy(np.zeros(2))}), "not bytes"),
    "a malformed view": (lambda p: archive_with(p, view_document(shape=[-2]), {}), "malformed view node"),
    "an integer that requires grad": (
        lambda p: archive_with(p, tensor_document(requires_grad=True), {"tensors/0.npy": npy(np.arange(2))}),
        "requires grad but its array is int64"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_damaged_or_hostile_file_is_refused_clearly(name, tmp_path, capfd):
    write, reason = HOSTILE[name]
    path = tmp_path / "hostile.pt"
    write(path)
    with pytest.raises(SerializationError) as error:
        jg.load(path)
    assert str(path) in str(error.value) and reason in str(error.value), str(error.value)
    assert "pwned" not in capfd.readouterr().out


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        jg.load(tmp_path / "nowhere.pt")


def test_map_location_is_the_cpu_or_none():
    with pytest.raises(ValueError, match="give 'cpu', or None"):
        jg.load(io.BytesIO(), map_location="cuda")
