"""W1-W4 on a CUDA GPU: what ``--device cuda`` of eager.py and compiled.py runs.

jitgrad on the GPU, eager and ``@jitgrad.compile`` (the whole step), against PyTorch's CUDA eager and
``torch.compile`` of the loss. Each builder copies the workload's numpy inputs to the GPU once; its
``step()`` ends by waiting for the device, so a step's time is the GPU's work and not only the time
to queue it. The hand-written numpy reference stays a column, on the CPU: verify.py checks every
library against it before anything is timed, and the results are copied to the host only there.

Nobody has run this on a GPU yet (the machines jitgrad is developed on have none): docs/benchmarks.md
says so until a run's tables replace that sentence.
"""
from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any, Callable

import libraries
import report
import workloads as eager
from compiled_workloads import (_jitgrad_step, _torch_loss, w1_jitgrad_parts, w1_torch_parts, w2_jitgrad_parts,
                                w2_torch_parts, w3_jitgrad_parts, w3_torch_parts)
from workloads import W4_HIDDEN, W4_STEPS, Inputs, Step

EAGER_COLUMNS = ("jitgrad_cuda_eager", "torch_cuda", "numpy")
COMPILED_COLUMNS = ("jitgrad_cuda", "jitgrad_cuda_eager", "torch_cuda", "torch_compile_cuda", "numpy")


def no_gpu_reason() -> str | None:
    """Why jitgrad cannot run on a GPU here, or None when it can. The simulator is no GPU: it runs
    one Python thread per CUDA thread, so its timings would mean nothing."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return "NUMBA_ENABLE_CUDASIM is set (the simulator is not a GPU)"
    try:
        import jitgrad.cuda
    except ImportError as error:
        return f"jitgrad's CUDA support cannot be imported ({error}): pip install -e '.[cuda]'"
    if not jitgrad.cuda.is_available():
        return "jitgrad.cuda.is_available() is False: no CUDA GPU on this machine"
    return None


def require_gpu() -> None:
    """Exits with a message (status 2) when there is no GPU: ``--device cuda`` measures nothing else."""
    reason = no_gpu_reason()
    if reason is not None:
        print(f"--device cuda needs a CUDA GPU: {reason}. GPU speed has not been measured "
              "(docs/benchmarks.md); run without --device for the CPU benchmark.", file=sys.stderr)
        sys.exit(2)


def probe(columns: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """The columns this machine can run, and why the others are skipped (PyTorch without CUDA)."""
    available, skipped = [], {}
    for key in columns:
        if key.startswith("torch"):
            try:
                import torch
            except ImportError as error:
                skipped[key] = f"ImportError: {error}"
                continue
            if not torch.cuda.is_available():
                skipped[key] = "torch.cuda.is_available() is False (a CPU-only build of PyTorch?)"
                continue
        available.append(key)
    return available, skipped


# ---- moving a workload's tensors to the GPU ----------------------------------------------------------------
def _jitgrad_on_cuda(parts: tuple[Callable, list, list[int]]) -> tuple[Callable, list, list[int]]:
    import jitgrad as jg
    loss, tensors, wanted = parts
    return loss, [jg.tensor(t.detach().numpy(), requires_grad=t.requires_grad, device="cuda") for t in tensors], wanted


def _torch_on_cuda(parts: tuple[Callable, list, list[int]]) -> tuple[Callable, list, list[int]]:
    loss, tensors, wanted = parts
    return loss, [t.detach().cuda().requires_grad_(t.requires_grad) for t in tensors], wanted


def w4_loss(lib: Any) -> Callable:
    """compiled_workloads' W4 with the initial state made on the weights' device."""
    def loss(wh, wx, xs):
        h = lib.zeros(W4_HIDDEN, dtype=wh.dtype, device=wh.device)
        for t in range(W4_STEPS):
            h = lib.tanh(wh @ h + wx @ xs[t])
        return (h * h).sum()
    return loss


def _w4_jitgrad_parts(inp: Inputs):
    import jitgrad as jg
    tensors = [jg.tensor(inp["wh"], requires_grad=True), jg.tensor(inp["wx"], requires_grad=True),
               jg.tensor(inp["xs"])]
    return w4_loss(jg), tensors, [0, 1]


def _w4_torch_parts(inp: Inputs):
    import torch
    tensors = [torch.from_numpy(inp["wh"].copy()).requires_grad_(), torch.from_numpy(inp["wx"].copy()).requires_grad_(),
               torch.from_numpy(inp["xs"].copy())]
    return w4_loss(torch), tensors, [0, 1]


# ---- the steps ----------------------------------------------------------------------------------------------
def _waiting(step: Step, synchronize: Callable[[], None]) -> Step:
    def run():
        result = step()
        synchronize()
        return result
    return run


def _eager_step(grad: Callable, loss: Callable, tensors: list, wanted: list[int]) -> Step:
    params = [tensors[i] for i in wanted]

    def step():
        value = loss(*tensors)
        return value, tuple(grad(value, params))
    return step


def _builders(jitgrad_parts: Callable, torch_parts: Callable) -> dict[str, Callable[[Inputs], Step]]:
    def jitgrad_sync():
        import jitgrad.cuda
        jitgrad.cuda.synchronize()

    def torch_sync():
        import torch
        torch.cuda.synchronize()

    def jitgrad_eager(inp):
        import jitgrad as jg
        return _waiting(_eager_step(jg.autograd.grad, *_jitgrad_on_cuda(jitgrad_parts(inp))), jitgrad_sync)

    def torch_eager(inp):
        import torch
        return _waiting(_eager_step(torch.autograd.grad, *_torch_on_cuda(torch_parts(inp))), torch_sync)

    return {"jitgrad_cuda_eager": jitgrad_eager,
            "jitgrad_cuda": lambda inp: _waiting(_jitgrad_step(*_jitgrad_on_cuda(jitgrad_parts(inp))), jitgrad_sync),
            "torch_cuda": torch_eager,
            "torch_compile_cuda": lambda inp: _waiting(_torch_loss(*_torch_on_cuda(torch_parts(inp))), torch_sync)}


_CUDA_BUILDERS = {
    "W1": _builders(w1_jitgrad_parts, w1_torch_parts),
    "W2": _builders(w2_jitgrad_parts, w2_torch_parts),
    "W3": _builders(w3_jitgrad_parts, w3_torch_parts),
    "W4": _builders(_w4_jitgrad_parts, _w4_torch_parts),
}
WORKLOADS = tuple(replace(w, builders={"numpy": w.builders["numpy"], **_CUDA_BUILDERS[w.key]}, goal=None)
                  for w in eager.WORKLOADS)


def baseline(available: list[str]) -> str:
    """Ratios divide by PyTorch's CUDA eager when it runs, else by the CPU reference."""
    return "torch_cuda" if "torch_cuda" in available else "numpy"


def run(args: Any, columns: tuple[str, ...], command: str) -> int:
    """``--device cuda`` of ``command`` (eager.py or compiled.py): verify, then time, ``columns`` on
    each workload, as the CPU runs do; exits at once, saying so, on a machine without a GPU."""
    require_gpu()
    import environment
    from eager import run_workload
    available, skipped = probe(columns)
    for key, reason in skipped.items():
        print(f"note: skipping {libraries.label(key)} ({reason})")
    rows = environment.describe(available) + describe_gpu()
    for name, value in rows:
        print(f"{name}: {value}")
    base = baseline(available)
    settings = (f"CUDA run, {'quick' if args.quick else 'full'} sizes, {args.rounds} interleaved rounds of "
                f"~{args.batch_ms:g} ms per library, median reported; every GPU step ends with a synchronize")
    print(settings, "\n")
    wanted = {w.upper() for w in args.only} if args.only else None
    results = []
    for workload in WORKLOADS:
        if wanted is None or workload.key in wanted:
            result = run_workload(workload, available, args)
            print(report.text_workload(result, base), "\n", flush=True)
            results.append(result)
    if args.markdown:
        section, begin = markdown_section(command, results, base, rows, settings, skipped)
        report.write_markdown(args.markdown, section, begin=begin)
        print(f"\nwrote {args.markdown}")
    return report.exit_status(results)


def describe_gpu() -> list[tuple[str, str]]:
    """The device the numbers were taken on, for the report beside the CPU and library versions."""
    from numba import cuda
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    return [("gpu", f"{name}, compute capability {device.compute_capability}")]


def markdown_section(command: str, results: list, base: str, environment: list[tuple[str, str]],
                     settings: str, skipped: dict[str, str]) -> tuple[str, str]:
    """A generated section of its own, and the marker it starts with, so that a GPU run never replaces
    the CPU tables."""
    begin = f"<!-- BEGIN GENERATED: python benchmarks/{command} --device cuda --markdown docs/benchmarks.md -->"
    out = [begin, "", *report.markdown_run(environment, settings, skipped)]
    out += report.markdown_workloads(results, base, suffix=" (CUDA run)")
    out.append(report.END)
    return "\n".join(out) + "\n", begin


__all__ = ["COMPILED_COLUMNS", "EAGER_COLUMNS", "WORKLOADS", "baseline", "describe_gpu", "markdown_section",
           "no_gpu_reason", "probe", "require_gpu", "run", "w4_loss"]
