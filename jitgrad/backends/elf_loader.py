"""A relocatable x86-64 ELF object -> machine code mapped into this process, with ctypes alone.

Why not LLVM's own JIT linker: a warm process that loads the disk cache's object code through llvmlite
pays for loading LLVM's library (about 30 ms of its 0.2-0.3 s) and for LLVM's teardown at exit (about
10 ms), to link an object of one code section, a few constant sections and a hundred relocations.
This module does that linking itself, for the objects ``llvm_cpu/machine_code.py`` makes on x86-64
Linux, and for numba's (``numba_cpu/object_loader.py``): the sections the program needs are copied
into one anonymous mapping, with zeroed room for common symbols (numba's environment pointers); every
relocation is applied by the psABI's formula; symbols the object leaves undefined are bound through a
``resolve`` function the caller gives; and the code's pages are made read-and-execute (never writable
and executable at once). ``.eh_frame`` is not loaded (no unwinding passes through a kernel; LLVM's JIT
registers it only for debuggers).

Anything outside that (another machine or ELF class, a relocation type not listed below, sections of
constructors or thread-local data, which only a full linker runs or sets up, a bound that does not hold) raises ``ElfLoadError`` before any code can run, and the caller
loads the object through llvmlite instead. The object's bytes come from the disk cache, verified
against the SHA-256 its entry records (``compile/cache.py``); every offset read here is still checked
against the object's size, so a damaged one is an error, never a write outside the mapping.
"""
from __future__ import annotations

import ctypes
import mmap
import platform
import struct
import sys
from typing import Callable

_EM_X86_64, _ET_REL = 62, 1
_SHF_WRITE, _SHF_ALLOC, _SHF_TLS = 0x1, 0x2, 0x400
_SHT_RUN_AT_LOAD = frozenset({14, 15, 16})   # SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY
_SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS, _SHT_X86_64_UNWIND = 2, 4, 8, 0x70000001
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS, _SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
_STT_SECTION = 3
_GOT_SYMBOL = "_GLOBAL_OFFSET_TABLE_"

# type -> (width in bytes, signed, formula): S the symbol's address, A the addend, P the place, GOT the
# table's address, G the symbol's slot's offset in it (the x86-64 psABI, table 4.10). PLT32 calls go
# straight to the symbol (no stubs: a call that would need one fails the 32-bit range check).
_RELOCATIONS = {
    1: (8, False, lambda S, A, P, GOT, G: S + A),            # R_X86_64_64
    2: (4, True, lambda S, A, P, GOT, G: S + A - P),         # R_X86_64_PC32
    4: (4, True, lambda S, A, P, GOT, G: S + A - P),         # R_X86_64_PLT32
    9: (4, True, lambda S, A, P, GOT, G: G + GOT + A - P),   # R_X86_64_GOTPCREL
    10: (4, False, lambda S, A, P, GOT, G: S + A),           # R_X86_64_32
    11: (4, True, lambda S, A, P, GOT, G: S + A),            # R_X86_64_32S
    24: (8, True, lambda S, A, P, GOT, G: S + A - P),        # R_X86_64_PC64
    25: (8, True, lambda S, A, P, GOT, G: S + A - GOT),      # R_X86_64_GOTOFF64
    26: (4, True, lambda S, A, P, GOT, G: GOT + A - P),      # R_X86_64_GOTPC32
    27: (8, True, lambda S, A, P, GOT, G: G + A),            # R_X86_64_GOT64
    28: (8, True, lambda S, A, P, GOT, G: G + GOT - P + A),  # R_X86_64_GOTPCREL64
    29: (8, True, lambda S, A, P, GOT, G: GOT - P + A),      # R_X86_64_GOTPC64
    41: (4, True, lambda S, A, P, GOT, G: G + GOT + A - P),  # R_X86_64_GOTPCRELX
    42: (4, True, lambda S, A, P, GOT, G: G + GOT + A - P),  # R_X86_64_REX_GOTPCRELX
}
_USES_GOT_SLOT = frozenset({9, 27, 28, 41, 42})


class ElfLoadError(Exception):
    """The object cannot be linked here by this module (the caller uses LLVM's JIT instead)."""


def supported() -> bool:
    """Whether this process can use the loader: x86-64 Linux, with libc's ``mmap`` and ``mprotect``."""
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64") and _libc() is not None


_LIBC: list[ctypes.CDLL | None] = []


def _libc() -> ctypes.CDLL | None:
    if not _LIBC:
        try:
            libc = ctypes.CDLL(None, use_errno=True)   # the process's own symbols, libc's among them
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            _LIBC.append(libc)
        except (OSError, AttributeError):
            _LIBC.append(None)
    return _LIBC[0]


class MappedCode:
    """The mapping that holds a linked object's sections; unmapped when this is collected, so whoever
    calls into the code keeps this alive (``loader.LoadedKernel`` does)."""

    def __init__(self, address: int, size: int, symbols: dict[str, int]) -> None:
        self.address = address
        self.size = size
        self.symbols = symbols   # the object's defined symbols -> their addresses

    def __del__(self) -> None:
        libc = _libc()
        if libc is not None and self.size:
            libc.munmap(self.address, self.size)
            self.size = 0


def _map(size: int) -> tuple[int, int]:
    """A fresh readable and writable anonymous mapping of at least ``size`` bytes: (address, size)."""
    libc = _libc()
    if libc is None:
        raise ElfLoadError("the C library's mmap is not available")
    size = max((size + mmap.PAGESIZE - 1) & ~(mmap.PAGESIZE - 1), mmap.PAGESIZE)
    base = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base is None or base == ctypes.c_void_p(-1).value:
        raise ElfLoadError(f"mmap of {size} bytes failed (errno {ctypes.get_errno()})")
    return base, size


def _protect(mapped: MappedCode, size: int) -> None:
    """Makes the first ``size`` bytes of ``mapped`` readable and executable, and no longer writable."""
    if size and _libc().mprotect(mapped.address, size, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
        raise ElfLoadError(f"mprotect failed (errno {ctypes.get_errno()})")


def map_machine_code(code: bytes) -> MappedCode:
    """``code``, position-independent machine code that names no symbol, mapped read-and-execute at
    ``MappedCode.address`` (``host_cpu.py``'s CPUID reader)."""
    base, size = _map(len(code))
    mapped = MappedCode(base, size, {})
    ctypes.memmove(base, code, len(code))
    _protect(mapped, size)
    return mapped


class _Section:
    __slots__ = ("index", "name", "kind", "flags", "offset", "size", "link", "info", "align", "entry_size",
                 "address")

    def __init__(self, index: int, fields: tuple, name: str) -> None:
        (_, self.kind, self.flags, _, self.offset, self.size, self.link, self.info, self.align,
         self.entry_size) = fields
        self.index, self.name, self.address = index, name, 0


def _sections(code: bytes) -> list[_Section]:
    if code[:4] != b"\x7fELF" or code[4:6] != b"\x02\x01":
        raise ElfLoadError("not a 64-bit little-endian ELF object")
    kind, machine = struct.unpack_from("<HH", code, 0x10)
    if kind != _ET_REL or machine != _EM_X86_64:
        raise ElfLoadError(f"ELF type {kind}, machine {machine}: only relocatable x86-64 objects are linked here")
    table, = struct.unpack_from("<Q", code, 0x28)
    entry_size, count, names_index = struct.unpack_from("<HHH", code, 0x3A)
    if entry_size != 64 or not 0 < count < 4096 or names_index >= count:
        raise ElfLoadError("the section header table is malformed")
    fields = [struct.unpack_from("<IIQQQQIIQQ", code, table + i * 64) for i in range(count)]
    names = fields[names_index]
    sections = []
    for i, f in enumerate(fields):
        if f[1] != _SHT_NOBITS and f[4] + f[5] > len(code):
            raise ElfLoadError(f"section {i} lies outside the object")
        name_at = names[4] + f[0]
        end = code.find(b"\0", name_at, names[4] + names[5])
        sections.append(_Section(i, f, code[name_at:end].decode("ascii", "replace") if end >= 0 else ""))
    return sections


def _loaded(section: _Section) -> bool:
    return bool(section.flags & _SHF_ALLOC) and section.kind != _SHT_X86_64_UNWIND and section.name != ".eh_frame"


def _symbols(code: bytes, sections: list[_Section]) -> list[tuple[str, int, int, int, int]]:
    """The symbol table: (name, section index, value, type, size) per entry, the null entry included."""
    tables = [s for s in sections if s.kind == _SHT_SYMTAB]
    if len(tables) != 1 or tables[0].entry_size != 24 or tables[0].link >= len(sections):
        raise ElfLoadError("the object has no single symbol table")
    table, names = tables[0], sections[tables[0].link]
    symbols = []
    for name_at, info, _, index, value, size in struct.iter_unpack("<IBBHQQ", code[table.offset:table.offset + table.size]):
        start = names.offset + name_at
        end = code.find(b"\0", start, names.offset + names.size)
        if end < 0:
            raise ElfLoadError("a symbol's name lies outside the string table")
        symbols.append((code[start:end].decode("ascii", "replace"), index, value, info & 0xF, size))
    return symbols


def link(code: bytes, resolve: Callable[[str], int | None]) -> MappedCode:
    """Maps ``code``'s sections into this process and links them; ``resolve`` gives the address of a
    symbol the object leaves undefined (None: ``ElfLoadError`` naming it)."""
    try:
        sections = _sections(code)
        symbols = _symbols(code, sections)
        relocations = [s for s in sections if s.kind == _SHT_RELA and s.info < len(sections) and _loaded(sections[s.info])]
        entries = []
        for rela in relocations:
            if rela.entry_size != 24 or rela.link >= len(sections) or sections[rela.link].kind != _SHT_SYMTAB:
                raise ElfLoadError(f"relocation section {rela.name} is malformed")
            entries += [(sections[rela.info], offset, info >> 32, info & 0xFFFFFFFF, addend)
                        for offset, info, addend in struct.iter_unpack("<QQq", code[rela.offset:rela.offset + rela.size])]
    except (struct.error, IndexError) as error:
        raise ElfLoadError(f"the object cannot be read ({error})") from None
    slots: dict[int, int] = {}   # symbol index -> its slot's offset in the table
    for _, _, symbol, kind, _ in entries:
        if kind not in _RELOCATIONS:
            raise ElfLoadError(f"relocation type {kind} is not one this loader applies")
        if symbol >= len(symbols):
            raise ElfLoadError("a relocation names a symbol the object does not have")
        if kind in _USES_GOT_SLOT:
            slots.setdefault(symbol, 8 * len(slots))

    # layout: read-only sections (code, constants) and the offset table, then, on pages of their own, the
    # writable ones; the first part becomes read-and-execute once linked
    layout, end = [], 0
    placed = [s for s in sections if _loaded(s)]
    for section in placed:   # code that must run at load (constructors) or per thread: MCJIT's to handle
        if section.flags & _SHF_TLS or section.kind in _SHT_RUN_AT_LOAD or section.name.startswith((".ctors", ".dtors")):
            raise ElfLoadError(f"section {section.name} (constructors or thread-local data) is not linked here")
    for writable in (False, True):
        if writable:
            got_at = end = (end + 7) & ~7
            end = (end + 8 * len(slots) + mmap.PAGESIZE - 1) & ~(mmap.PAGESIZE - 1)
            protected = end
        for section in placed:
            if bool(section.flags & _SHF_WRITE) == writable:
                align = max(section.align, 1)
                if align & (align - 1):
                    raise ElfLoadError(f"section {section.name} has alignment {align}")
                end = (end + align - 1) & ~(align - 1)
                layout.append((section, end))
                end += section.size
    commons = {}   # symbol index -> its offset: common symbols (numba's environments) get zeroed room here
    for i, (name, index, value, _, symbol_size) in enumerate(symbols):
        if index == _SHN_COMMON:
            align = max(value, 1)   # a common symbol's value is its alignment
            if align & (align - 1) or symbol_size > 1 << 20:
                raise ElfLoadError(f"common symbol {name} has alignment {align} and size {symbol_size}")
            commons[i] = end = (end + align - 1) & ~(align - 1)
            end += symbol_size
    base, size = _map(end)
    mapped = MappedCode(base, size, {})
    memory = memoryview((ctypes.c_char * size).from_address(base)).cast("B")
    for section, at in layout:
        section.address = base + at
        if section.kind != _SHT_NOBITS:
            memory[at:at + section.size] = code[section.offset:section.offset + section.size]
    got = base + got_at

    addresses = []
    for i, (name, index, value, kind, _) in enumerate(symbols):
        if index == _SHN_UNDEF:
            address = got if name == _GOT_SYMBOL else (resolve(name) if name else 0)
            if address is None:
                raise ElfLoadError(f"symbol {name} is not in this process")
        elif index == _SHN_ABS:
            address = value
        elif index == _SHN_COMMON:
            address = base + commons[i]
        elif index >= _SHN_LORESERVE or index >= len(sections):
            raise ElfLoadError(f"symbol {name} is in special section {index:#x}")
        elif not _loaded(sections[index]):
            address = None    # in a section not loaded: an error only if a relocation names it
        else:
            address = sections[index].address + (0 if kind == _STT_SECTION else value)
        addresses.append(address)
    for symbol, offset in slots.items():
        if addresses[symbol] is None:
            raise ElfLoadError(f"a relocation names {symbols[symbol][0]}, in a section not loaded")
        struct.pack_into("<Q", memory, got_at + offset, addresses[symbol])
    for section, offset, symbol, kind, addend in entries:
        width, signed, formula = _RELOCATIONS[kind]
        if offset + width > section.size:
            raise ElfLoadError(f"a relocation lies outside section {section.name}")
        target = addresses[symbol]
        if target is None:
            raise ElfLoadError(f"a relocation names {symbols[symbol][0]}, in a section not loaded")
        place = section.address + offset
        value = formula(target, addend, place, got, slots.get(symbol, 0))
        bits = 8 * width
        low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        if width == 8:
            value &= (1 << 64) - 1   # 64-bit arithmetic wraps
        elif not low <= value < high:
            raise ElfLoadError(f"relocation type {kind} at {section.name}+{offset:#x} is out of its 32-bit range")
        struct.pack_into("<Q" if width == 8 else ("<i" if signed else "<I"), memory, place - base, value)
    memory.release()
    _protect(mapped, protected)
    mapped.symbols = {name: address for (name, index, _, kind, _), address in zip(symbols, addresses)
                      if name and index != _SHN_UNDEF and address is not None and kind != _STT_SECTION}
    return mapped


__all__ = ["ElfLoadError", "MappedCode", "link", "map_machine_code", "supported"]
