"""Backends that compile captured graphs (``jitgrad.fx``) into machine code. ``numba_cpu`` lowers a graph
to one ``numba.njit`` function; see docs/backends.md."""
