"""The CPU object code is compiled for, as the disk cache keys it, read without loading LLVM on x86-64.

Object code targets the host's CPU (LLVM's name and features for it) and must never run on one that
lacks an instruction it uses. Asking LLVM means loading llvmlite's library, about 30 ms of a warm
process that otherwise never needs it (``backends/elf_loader.py`` links the cached code). LLVM derives
both from the CPUID instruction (and XGETBV, which says which register states the OS saves), so on
x86-64 the key is a digest of what those report for the leaves LLVM reads, run here through a few
bytes of machine code: the same processor gives the same digest, and any processor LLVM could tell
apart differs in it. A virtual machine or an emulator that reports a CPUID of its own is another CPU,
as it should be (``/proc/cpuinfo`` names what the kernel saw at boot, not what this process runs on).

Elsewhere (another architecture, no executable mapping) the key is LLVM's host CPU name and features,
as numba reads them.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import struct
from typing import Callable

# void cpuid(uint32 leaf, uint32 subleaf, uint32 out[4]) (System V): push rbx; mov r8, rdx; mov eax, edi;
# mov ecx, esi; cpuid; mov [r8], eax; mov [r8+4], ebx; mov [r8+8], ecx; mov [r8+12], edx; pop rbx; ret
_CPUID = bytes.fromhex("53 4989d0 89f8 89f1 0fa2 418900 41895804 41894808 4189500c 5b c3")
# uint64 xgetbv(uint32 index): mov ecx, edi; xgetbv; shl rdx, 32; or rax, rdx; ret
_XGETBV = bytes.fromhex("89f9 0f01d0 48c1e220 4809d0 c3")
# (leaf, subleaf) LLVM's host detection reads (llvm/lib/TargetParser/Host.cpp), basic then extended
_LEAVES = ((1, 0), (7, 0), (7, 1), (0xD, 1), (0x14, 0), (0x19, 0), (0x1D, 0), (0x1E, 0), (0x24, 0))
_EXTENDED_LEAVES = ((0x80000001, 0), (0x80000008, 0))
_APIC_ID = 0x00FFFFFF   # leaf 1's EBX without its top byte, the initial APIC id of the core it ran on
_OSXSAVE = 1 << 27      # leaf 1's ECX: XGETBV is available


def _cpuid_reader() -> tuple[Callable[[int, int], tuple[int, ...]], Callable[[int], int], list]:
    from .elf_loader import map_machine_code

    cpuid_code, xgetbv_code = map_machine_code(_CPUID), map_machine_code(_XGETBV)
    cpuid_function = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p)(cpuid_code.address)
    xgetbv = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint32)(xgetbv_code.address)

    def cpuid(leaf: int, subleaf: int) -> tuple[int, ...]:
        out = (ctypes.c_uint32 * 4)()
        cpuid_function(leaf, subleaf, ctypes.addressof(out))
        return tuple(out)
    return cpuid, xgetbv, [cpuid_code, xgetbv_code]   # the mappings stay alive while they are called


def _from_cpuid() -> dict[str, str]:
    cpuid, xgetbv, mappings = _cpuid_reader()
    top, *vendor = cpuid(0, 0)
    signature, brand, features, more = cpuid(1, 0)
    words = [top, *vendor, signature, brand & _APIC_ID, features, more]
    words += [w for leaf, sub in _LEAVES[1:] if leaf <= top for w in cpuid(leaf, sub)]
    top_extended = cpuid(0x80000000, 0)[0]
    words += [w for leaf, sub in _EXTENDED_LEAVES if leaf <= top_extended for w in cpuid(leaf, sub)]
    if features & _OSXSAVE:
        words += [xgetbv(0)]
    del mappings
    name = struct.pack("<3I", vendor[0], vendor[2], vendor[1]).decode("ascii", "replace")
    digest = hashlib.sha256(struct.pack(f"<{len(words)}Q", *words)).hexdigest()
    return {"cpu": f"{name} signature {signature:#x}", "features": f"cpuid sha256 {digest}"}


def _from_llvm() -> dict[str, str]:
    import llvmlite.binding as llvm

    return {"cpu": llvm.get_host_cpu_name(), "features": llvm.get_host_cpu_features().flatten()}


@functools.lru_cache(maxsize=None)
def host_cpu() -> dict[str, str]:
    """``{"cpu": ..., "features": ...}`` for the disk cache's keys (see the module docstring)."""
    from . import elf_loader

    if elf_loader.supported():
        try:
            return _from_cpuid()
        except elf_loader.ElfLoadError:
            pass
    return _from_llvm()


__all__ = ["host_cpu"]
