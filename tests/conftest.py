"""Options of the whole suite. Here, at the top of ``tests``, so that pytest knows them however it is
started (``python -m pytest``, or on one file or folder)."""


def pytest_addoption(parser):
    parser.addoption("--many", nargs="?", const=10_000, type=int, default=None, metavar="N",
                     help="run N random programs (10,000 without N) per random-program test, instead of "
                          "the few hundred of a CI run (tests/compile/test_random_programs.py)")
