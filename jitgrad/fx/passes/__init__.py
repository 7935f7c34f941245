"""Graph passes: each a function that edits a ``Graph`` in place, returns it and records what it
changed in ``graph.history`` (``partition_joint`` splits a graph, so it returns a ``Partition``)."""
from .batch_products import batch_matrix_products
from .common_subexpressions import eliminate_common_subexpressions
from .constant_folding import fold_constants
from .convolution_columns import share_convolution_columns
from .dead_code import eliminate_dead_code
from .fusion import group_fusions
from .manager import DEFAULT_PIPELINE, LOOP_PIPELINE, PIPELINES, PassManager, PassRun
from .memory import plan_memory
from .partition import Partition, partition_joint
from .rematerialize import rematerialize
from .roll_loops import roll_loops
from .simplify import simplify_algebra
from .topological_sort import topological_order, topological_sort

__all__ = ["DEFAULT_PIPELINE", "LOOP_PIPELINE", "PIPELINES", "Partition", "PassManager", "PassRun",
           "batch_matrix_products", "eliminate_common_subexpressions", "eliminate_dead_code", "fold_constants",
           "group_fusions", "partition_joint", "plan_memory", "rematerialize", "roll_loops",
           "share_convolution_columns", "simplify_algebra", "topological_order", "topological_sort"]
