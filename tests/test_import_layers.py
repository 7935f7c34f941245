"""The package's layers, bottom up, and that no layer reaches up into one above it.

Each layer imports on its own, in a fresh interpreter that has imported nothing above it, and no module
of a layer imports a module of a higher one, not even inside a function or under ``TYPE_CHECKING``. A
layer that needs something from above takes it as an argument or a registered callback
(``autograd/provided.py``, ``tensor.autograd_hooks``).

``jitgrad/__init__.py`` is the public namespace and imports every layer, so the fresh interpreters load
the package's folder without running it: otherwise ``import jitgrad.autograd.engine`` would import
``jitgrad.ops`` through ``jitgrad`` itself, whatever the engine imports.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jitgrad"

# Bottom up; a module belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("jitgrad.device", "jitgrad.dtypes", "jitgrad.shapes", "jitgrad.hooks", "jitgrad.formatting", "jitgrad.shared_arrays",
     "jitgrad.thread_settings", "jitgrad.signatures",
     "jitgrad.tensor"),
    ("jitgrad.random",),   # Philox bits and the generator's state; ops' sampling entries draw through it
    ("jitgrad.autograd",),
    ("jitgrad.ops",),
    ("jitgrad.distributed",),  # collectives over MPI on tensors; nn.parallel's DistributedDataParallel builds on them
    ("jitgrad.factories", "jitgrad.nn", "jitgrad.linalg", "jitgrad.special",
     "jitgrad.testing"),  # torch.linalg, torch.special over the ops; torch.testing over the factories
    ("jitgrad.distributions",),  # torch.distributions: families made of ops, drawing through the factories
    ("jitgrad.fx",),
    ("jitgrad.backends",),
    ("jitgrad.compile", "jitgrad.cuda", "jitgrad.accelerator"),  # jitgrad.cuda installs the backend's eager runner
    ("jitgrad.optim", "jitgrad.utils", "jitgrad.serialization", "jitgrad.func"),  # training: optimizers tell jitgrad.compile to run their first step eagerly
)
TOP = len(LAYERS)  # the package itself: the public namespace over every layer
METADATA = {"__version__"}  # names of the package itself any layer may read


def module_names() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = module_names()


def layer_of(module: str) -> int:
    if module == "jitgrad":
        return TOP
    matches = [(len(prefix), index) for index, layer in enumerate(LAYERS) for prefix in layer
               if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} belongs to no layer: add it to LAYERS in {Path(__file__).name}"
    return max(matches)[1]


def imports_of(module: str) -> list[tuple[int, str]]:
    """``(line, module)`` for every jitgrad module that ``module`` imports, anywhere in its source."""
    is_package = (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists()
    path = PACKAGE.parent / (module.replace(".", "/") + ("/__init__.py" if is_package else ".py"))
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "jitgrad"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "jitgrad":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in MODULES:
                    found.append((node.lineno, submodule))
                elif not (target == "jitgrad" and alias.name in METADATA):
                    found.append((node.lineno, target))
    return found


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_a_higher_layer():
    upward = [f"{module}:{line} imports {target} (layer {layer_of(target)} > {layer_of(module)})"
              for module in MODULES for line, target in imports_of(module)
              if layer_of(target) > layer_of(module)]
    assert not upward, "imports that reach up a layer:\n" + "\n".join(upward)


# Loads the package's folder without running jitgrad/__init__.py, imports the given modules and
# prints every jitgrad module then loaded.
ISOLATED_IMPORT = """
import importlib, json, sys, types
package = types.ModuleType("jitgrad")
package.__path__ = [{package!r}]
sys.modules["jitgrad"] = package
for name in {modules!r}:
    importlib.import_module(name)
print(json.dumps(sorted(name for name in sys.modules if name.startswith("jitgrad."))))
"""


@pytest.mark.parametrize("layer", range(len(LAYERS)), ids=[layer[0].removeprefix("jitgrad.") for layer in LAYERS])
def test_each_layer_imports_on_its_own(layer):
    """Bottom up, each layer in a fresh interpreter: its modules import without error, and without
    loading any module of a layer above (``jitgrad.autograd.engine`` without ``jitgrad.ops``)."""
    own = [module for module in MODULES if module != "jitgrad" and layer_of(module) == layer]
    script = ISOLATED_IMPORT.format(package=str(PACKAGE), modules=own)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    above = [module for module in loaded if layer_of(module) > layer]
    assert not above, f"importing {LAYERS[layer]} loaded modules of higher layers: {above}"
    assert set(own) <= set(loaded)
