"""Hand-written ``@cuda.jit`` kernels for the statement intrinsics, each behind a host function that takes
device arrays (any strides), the output device array and a stream.

Each module lists its kernels in ``KERNELS`` as ``(name, kernel, [argument types...])``: the numba
types to compile the kernel with for every dtype and rank it serves, so that a test compiles each one
to PTX (``numba.cuda.compile_ptx``) on a machine with no GPU.
"""
