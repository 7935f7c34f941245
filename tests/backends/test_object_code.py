"""The exception table of a kernel kept as object code (issue 18): numba's pickled exceptions become
plain data in the process that compiled the kernel, and the loading process rebuilds the exception
from that data, never unpickling. (Loading and running object code: tests/compile/test_warm_start.py
and tests/reliability/test_cache_attacks.py.)"""
from __future__ import annotations

import pickle

import pytest

from jitgrad.backends.numba_cpu.object_code import NotStorable, describe_exception
from jitgrad.backends.numba_cpu.object_loader import exception_info


def test_an_exception_is_described_as_plain_data_and_rebuilt():
    raised = (ValueError, ("total size of new array must be unchanged", 3, (1, 2.5)), ("reshape", "file.py", 7))
    data = pickle.dumps(raised)
    described = describe_exception(data)
    assert described == {"data": data.hex(), "class": "ValueError",
                         "args": [{"value": "total size of new array must be unchanged"}, {"value": 3},
                                  {"value": [1, 2.5]}],
                         "location": ["reshape", "file.py", 7]}
    assert exception_info(described, ()) == raised


def test_run_time_arguments_take_their_places():
    from llvmlite import ir
    dummy = ir.Constant(ir.IntType(8), None)   # what numba pickles for an argument known at run time
    described = describe_exception(pickle.dumps((IndexError, ("index", dummy, "out of", dummy), None)))
    assert described["args"][1] == {"runtime": True}
    assert exception_info(described, (5, 3)) == (IndexError, ("index", 5, "out of", 3), None)


class KernelError(Exception):
    pass


@pytest.mark.parametrize("raised", [(KernelError, ("x",), None), (ValueError, (object(),), None), (ValueError, "x", None),
                                    (ValueError, (float("nan"),), None)])
def test_an_exception_that_is_not_plain_data_keeps_the_kernel_out(raised):
    with pytest.raises(NotStorable):
        describe_exception(pickle.dumps(raised))


def test_a_described_class_that_is_not_a_built_in_exception_becomes_system_error():
    kind, args, _ = exception_info({"class": "print", "args": [{"value": "x"}], "location": None}, ())
    assert kind is SystemError and args == ("x",)
