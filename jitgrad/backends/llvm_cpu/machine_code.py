"""LLVM IR text -> an optimised object file for this CPU, through llvmlite alone.

The target machine is the host's CPU and features (what numba targets too; the disk cache's
``machine()`` keys object code on the CPUID they come from, ``backends/host_cpu.py``); the
optimisation pipeline is LLVM's own at ``OPT_LEVEL`` with the loop and SLP vectorizers on, as numba
runs it by default. Floating-point instructions carry no fast-math flags unless the kernel was
generated with ``fastmath`` (``function_writer.float_flags``), so without it LLVM neither
reassociates nor contracts: the same arithmetic as numba's kernels with ``fastmath=False``.
"""
from __future__ import annotations

import functools
from typing import Any

OPT_LEVEL = 3


def new_target_machine() -> Any:
    """A target machine for the host CPU. An execution engine takes ownership of the one it is given
    (and frees it with itself), so each engine gets a new one (``loader.py``)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=OPT_LEVEL, reloc="pic", codemodel="jitdefault")


@functools.lru_cache(maxsize=None)
def target_machine() -> Any:
    """The process's target machine for compiling (never handed to an execution engine)."""
    return new_target_machine()


def compile_ir(ir: str) -> bytes:
    """The object code of the module ``ir`` (``ValueError``/``RuntimeError`` from LLVM where the IR is
    malformed: a bug of the generator, which the caller turns into a compile by numba)."""
    import llvmlite.binding as llvm

    machine = target_machine()
    module = llvm.parse_assembly(ir)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    module.verify()
    tuning = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)
    return machine.emit_object(module)


__all__ = ["OPT_LEVEL", "compile_ir", "new_target_machine", "target_machine"]
