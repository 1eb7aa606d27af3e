# Cython's typing of rangecoder.py (pure-Python mode: this file augments the module when the compiled hot path is
# built, api/compiled.py; the .py runs unchanged without it). Only decompress_python's locals get C types; its
# arguments stay objects, so every caller's input (bytes, bytearray, memoryview, odd limits) takes the Python
# path's checks and errors. Widths: 64-bit signed throughout, so that every value the Python code holds fits with
# room to spare (the uint32 coder state and products below 2^33; `code // rng` below 2^32) and the Python code's
# own masks and `< 0` tests work unchanged; `//` keeps Python's semantics (no cdivision).
import cython

@cython.locals(n=cython.Py_ssize_t, pos=cython.Py_ssize_t,
               nxt=cython.Py_ssize_t, bound=cython.Py_ssize_t, predicted=cython.Py_ssize_t, order=cython.Py_ssize_t,
               sub=cython.Py_ssize_t, node=cython.Py_ssize_t, child=cython.Py_ssize_t, bottom=cython.Py_ssize_t,
               link=cython.Py_ssize_t, patch=cython.Py_ssize_t,
               code=cython.longlong, low=cython.longlong, rng=cython.longlong, under=cython.longlong,
               e=cython.longlong, total=cython.longlong, c=cython.longlong, u=cython.longlong,
               after=cython.longlong, count=cython.longlong, value=cython.longlong, t=cython.longlong,
               v=cython.longlong, before=cython.longlong,
               values=list, counts=list, unders=list, lefts=list, rights=list, symbols=list, escapes=list,
               totals=list, parents=list, out=list)
cpdef decompress_python(data, limit)
