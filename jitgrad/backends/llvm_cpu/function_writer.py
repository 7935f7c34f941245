"""Writing one LLVM IR function as text: fresh SSA names, instructions, counted loops and the module's
declarations.

Loops and running values live in stack slots (``alloca`` in the entry block, loaded and stored), the
way a C front end writes them: LLVM's first passes (SROA, mem2reg) turn them into registers and
phi nodes, so the generator never has to place a phi itself. Integer index arithmetic folds the
literals ``0`` and ``1`` (a size 1 is structure, known when writing; every other size is a run-time
value), which keeps the IR of a contiguous array's addressing short before any optimisation.
"""
from __future__ import annotations

import contextlib
import re
import struct
from typing import Iterator

import numpy as np

_MEMORY_TYPES = {"float32": "float", "float64": "double", "int8": "i8", "uint8": "i8", "int16": "i16",
                 "uint16": "i16", "int32": "i32", "uint32": "i32", "int64": "i64", "uint64": "i64", "bool": "i8"}


def memory_type(dtype: np.dtype) -> str:
    """The LLVM type an element of ``dtype`` has in memory (a bool is a byte, as numpy stores it)."""
    try:
        return _MEMORY_TYPES[np.dtype(dtype).name]
    except KeyError:
        raise NotImplementedError(f"the LLVM CPU backend has no type for dtype {np.dtype(dtype)}") from None


def value_type(dtype: np.dtype) -> str:
    """The LLVM type of a value of ``dtype`` in a register (a bool is an ``i1``)."""
    return "i1" if np.dtype(dtype) == np.bool_ else memory_type(dtype)


def float_literal(value: float, dtype: np.dtype) -> str:
    """A float constant as LLVM writes it exactly: the hex of the double, which for a float32 must be
    the float32 value widened."""
    if np.dtype(dtype) == np.float32:
        value = float(np.float32(value))
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", float(value)))[0]


def literal(value: int | float | bool, dtype: np.dtype) -> str:
    """``value`` as an LLVM constant of ``dtype``'s value type."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "true" if value else "false"
    if dtype.kind == "f":
        return float_literal(value, dtype)
    return str(int(value))


class FunctionWriter:
    """The lines of one function being written, its stack slots, and the declarations of the module it
    goes in (each written once, whoever asks first)."""

    def __init__(self, fastmath: bool = False) -> None:
        self.fastmath = fastmath
        self.lines: list[str] = []
        self.slots: list[str] = []
        self.top: list[str] = []      # the entry block after the slots: arguments, sizes, numbers
        self.declarations: dict[str, str] = {}
        self._taken: dict[str, int] = {"entry": 1, "body": 1}   # the two labels ``define`` writes

    # ---- names and lines ---------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A new SSA name (``%hint``, ``%hint.1``...; a hint's own dots become underscores, so that no
        hint can be another's numbered name)."""
        hint = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
        count = self._taken.get(hint, 0)
        self._taken[hint] = count + 1
        return f"%{hint}" if count == 0 else f"%{hint}.{count}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def comment(self, text: str) -> None:
        self.lines.append("  ; " + text.lstrip("# ").replace("\n", " "))

    def label(self, name: str) -> None:
        self.lines.append(f"{name[1:]}:")

    def assign(self, hint: str, instruction: str) -> str:
        name = self.fresh(hint)
        self.emit(f"{name} = {instruction}")
        return name

    @contextlib.contextmanager
    def at_top(self) -> Iterator[None]:
        """What is written inside goes to the entry block: values every later block may use (a size, a
        number), wherever they were first asked for."""
        saved, self.lines = self.lines, self.top
        try:
            yield
        finally:
            self.lines = saved

    def declare(self, name: str, text: str) -> None:
        """A declaration or helper definition the module needs, by its symbol."""
        self.declarations.setdefault(name, text)

    @property
    def float_flags(self) -> str:
        """``fastmath=True`` is numba's (``numba_cpu/numba_options.FAST_MATH_FLAGS``) on every float
        instruction: LLVM's ``fast`` but ``nnan`` and ``ninf``, so that NaN and infinities stay what they
        are (with them ``isnan(nan)`` was False); off, none."""
        return "reassoc contract arcp afn nsz " if self.fastmath else ""

    # ---- stack slots and loops ---------------------------------------------------------------------
    def slot(self, llvm_type: str, hint: str) -> str:
        """A stack slot in the entry block (promoted to a register by LLVM)."""
        name = self.fresh(hint + ".slot")
        self.slots.append(f"  {name} = alloca {llvm_type}")
        return name

    def load(self, llvm_type: str, pointer: str, hint: str) -> str:
        return self.assign(hint, f"load {llvm_type}, ptr {pointer}")

    def store(self, llvm_type: str, value: str, pointer: str) -> None:
        self.emit(f"store {llvm_type} {value}, ptr {pointer}")

    @contextlib.contextmanager
    def loop(self, count: str, hint: str = "i", start: str = "0") -> Iterator[str]:
        """``for index in range(start, count)``: yields the index (an i64) inside the body."""
        counter = self.slot("i64", hint)
        head, body, end = self.fresh(hint + ".head"), self.fresh(hint + ".body"), self.fresh(hint + ".end")
        self.store("i64", start, counter)
        self.emit(f"br label {head}")
        self.label(head)
        index = self.load("i64", counter, hint)
        more = self.assign(hint + ".more", f"icmp slt i64 {index}, {count}")
        self.emit(f"br i1 {more}, label {body}, label {end}")
        self.label(body)
        yield index
        following = self.assign(hint + ".next", f"add nsw i64 {index}, 1")
        self.store("i64", following, counter)
        self.emit(f"br label {head}")
        self.label(end)

    @contextlib.contextmanager
    def when(self, condition: str, hint: str = "if") -> Iterator[None]:
        """The body runs where ``condition`` (an i1) holds."""
        then, end = self.fresh(hint + ".then"), self.fresh(hint + ".end")
        self.emit(f"br i1 {condition}, label {then}, label {end}")
        self.label(then)
        yield
        self.emit(f"br label {end}")
        self.label(end)

    # ---- integer index arithmetic ------------------------------------------------------------------
    def add(self, a: str, b: str) -> str:
        if a == "0":
            return b
        if b == "0":
            return a
        return self.assign("ix", f"add nsw i64 {a}, {b}")

    def mul(self, a: str, b: str) -> str:
        if a == "1":
            return b
        if b == "1":
            return a
        if "0" in (a, b):
            return "0"
        return self.assign("ix", f"mul nsw i64 {a}, {b}")

    def product(self, values: list[str] | tuple[str, ...]) -> str:
        result = "1"
        for value in values:
            result = self.mul(result, value)
        return result

    def element_pointer(self, dtype: np.dtype, base: str, offset: str, hint: str = "p") -> str:
        if offset == "0":
            return base
        return self.assign(hint, f"getelementptr inbounds {memory_type(dtype)}, ptr {base}, i64 {offset}")

    def define(self, header: str) -> str:
        """The function's text: ``header`` (``define ... {``), the entry block (its stack slots, then
        ``top``), then the body written so far."""
        return "\n".join([header, "entry:", *self.slots, *self.top, "  br label %body", "body:", *self.lines, "}"])


__all__ = ["FunctionWriter", "float_literal", "literal", "memory_type", "value_type"]
