"""llvm_cpu's own linker (``elf_loader``) runs LLVM's object code exactly as LLVM's JIT does, refuses what
it cannot link before any code runs (and the loader then uses LLVM's JIT, saying why), and the disk
cache's CPU key (``host_cpu``) is read without LLVM and follows what CPUID reports (issue 18)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends import elf_loader, host_cpu, llvm_cpu
from jitgrad.backends.llvm_cpu import loader
from jitgrad.backends.llvm_cpu.machine_code import compile_ir
from jitgrad.fx import passes

pytestmark = pytest.mark.skipif(not elf_loader.supported(), reason="jitgrad's ELF loader links x86-64 Linux "
                                                                   "objects only (elsewhere LLVM's JIT does)")
X = np.random.default_rng(18).standard_normal((4, 3)).astype(np.float32)
W = np.random.default_rng(19).standard_normal((3, 5)).astype(np.float32)


def _loss(x, w):
    # a BLAS call (numpy's sgemm), float32 tanh and exp (constants in .rodata), libm's logf, a row reduction
    return ((x @ w).tanh().exp() + 1.0).log().sum(1)


@pytest.fixture(scope="module")
def kernel():
    llvm_cpu.clear_cache()
    graph = passes.PassManager().run(fx.trace(_loss, jg.tensor(X), jg.tensor(W)).graph)
    compiled = llvm_cpu.lower(graph)
    return compiled, compile_ir(compiled.source)


def _run_with(compiled, loaded):
    compiled.loaded, compiled.kernel = loaded, loaded.function
    return [np.array(out) for out in compiled(X, W)]


def test_the_object_runs_bit_for_bit_as_llvms_jit_runs_it(kernel):
    compiled, code = kernel
    assert isinstance(compiled.loaded.engine, elf_loader.MappedCode) and compiled.loaded.note is None
    ours = _run_with(compiled, loader.load(code, linker="elf"))
    llvms = _run_with(compiled, loader.load(code, linker="llvm"))
    assert [a.tobytes() for a in ours] == [b.tobytes() for b in llvms]
    expected = np.log(np.exp(np.tanh(X.astype(np.float64) @ W)) + 1.0).sum(1)
    np.testing.assert_allclose(ours[0], expected, rtol=1e-5)


def _relocations(code: bytes):
    """(offset in ``code`` of each relocation entry's info word, its type), from the section headers."""
    table, = struct.unpack_from("<Q", code, 0x28)
    count, = struct.unpack_from("<H", code, 0x3C)
    found = []
    for i in range(count):
        _, kind, _, _, offset, size, _, _, _, _ = struct.unpack_from("<IIQQQQIIQQ", code, table + 64 * i)
        if kind == 4:
            found += [(at + 8, struct.unpack_from("<Q", code, at + 8)[0] & 0xFFFFFFFF)
                      for at in range(offset, offset + size, 24)]
    return found


def test_what_the_loader_cannot_link_is_refused_before_anything_runs(kernel):
    _, code = kernel
    at, kind = _relocations(code)[0]
    unknown = bytearray(code)
    struct.pack_into("<I", unknown, at, 3)   # R_X86_64_GOT32: not a type LLVM's objects use here
    with pytest.raises(elf_loader.ElfLoadError, match="relocation type 3"):
        elf_loader.link(bytes(unknown), loader.resolve)
    with pytest.raises(elf_loader.ElfLoadError):
        elf_loader.link(code[:len(code) // 2], loader.resolve)
    with pytest.raises(elf_loader.ElfLoadError, match="logf"):
        elf_loader.link(code, lambda name: None if name == "logf" else loader.resolve(name))
    constructors = bytearray(code)   # the code section marked an init array: never linked without running it
    table, = struct.unpack_from("<Q", code, 0x28)
    count, = struct.unpack_from("<H", code, 0x3C)
    text = next(i for i in range(count) if struct.unpack_from("<Q", code, table + 64 * i + 8)[0] & 0x4)  # SHF_EXECINSTR
    struct.pack_into("<I", constructors, table + 64 * text + 4, 14)
    with pytest.raises(elf_loader.ElfLoadError, match="constructors"):
        elf_loader.link(bytes(constructors), loader.resolve)
    not_relocatable = bytearray(code)
    struct.pack_into("<H", not_relocatable, 0x10, 3)   # a shared object
    with pytest.raises(elf_loader.ElfLoadError, match="relocatable x86-64"):
        elf_loader.link(bytes(not_relocatable), loader.resolve)


def test_a_refused_object_is_linked_by_llvms_jit_with_the_reason(kernel, monkeypatch):
    compiled, code = kernel
    expected = _run_with(compiled, loader.load(code, linker="elf"))

    def refuse(code, resolve):
        raise elf_loader.ElfLoadError("relocation type 99 is not one this loader applies")
    monkeypatch.setattr(elf_loader, "link", refuse)
    loaded = loader.load(code)
    assert not isinstance(loaded.engine, elf_loader.MappedCode)
    assert "LLVM's JIT" in loaded.note and "relocation type 99" in loaded.note
    assert [a.tobytes() for a in _run_with(compiled, loaded)] == [b.tobytes() for b in expected]
    with pytest.raises(loader.LoadFailure, match="relocation type 99"):
        loader.load(code, linker="elf")


def test_the_cpu_key_is_cpuids_digest_and_changes_with_any_word(monkeypatch):
    key = host_cpu.host_cpu()
    assert key["features"].startswith("cpuid sha256 ") and key == host_cpu._from_cpuid()
    assert key["cpu"].split()[0] in ("GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls")
    real = host_cpu._cpuid_reader

    def one_bit_flipped():   # leaf 7's EBX (AVX2, AVX-512F...) with one bit changed
        cpuid, xgetbv, mappings = real()
        return (lambda leaf, sub: tuple(w ^ (1 << 16) if (leaf, sub, i) == (7, 0, 1) else w
                                        for i, w in enumerate(cpuid(leaf, sub)))), xgetbv, mappings
    monkeypatch.setattr(host_cpu, "_cpuid_reader", one_bit_flipped)
    assert host_cpu._from_cpuid()["features"] != key["features"]

    def another_core():      # another core's APIC id: the same processor
        cpuid, xgetbv, mappings = real()
        return (lambda leaf, sub: tuple(w ^ (7 << 24) if (leaf, sub, i) == (1, 0, 1) else w
                                        for i, w in enumerate(cpuid(leaf, sub)))), xgetbv, mappings
    monkeypatch.setattr(host_cpu, "_cpuid_reader", another_core)
    assert host_cpu._from_cpuid() == key
