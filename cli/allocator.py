"""The C allocator's thresholds for the `protodump` process (never for a program that imports the library).

glibc's malloc gives a block of 128 KiB or more its own mapping, unmapped again when freed: the next such block
costs a page fault every 4 KiB. A packet's -V or JSON text, a reassembled message, an inflated WebSocket frame
are such blocks, one or more per frame. glibc raises the limit by itself the first time a mapped block is freed;
protodump only benefited from that by accident, as long as reading Wireshark's manuf file (2 MB) did it at
start-up. Set explicitly instead: blocks under 4 MiB come from the heap, and the heap keeps up to 8 MiB free at
its top (glibc's own rule after freeing a 4 MiB block). Measured on freeblox-session.pcap replayed 100 times,
`protodump -j 1 -V`: 56,500 minor faults and 0.16 s of system time without, 5,700 and 0.04 s with.

No library does this (it is one C call); ctypes is already loaded by the range decoder's libenet binding.
"""
from __future__ import annotations

M_TRIM_THRESHOLD = -1        # glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 4 << 20
TRIM_THRESHOLD = 8 << 20


def tune() -> bool:
    """Set the thresholds; False where the C library has no mallopt (not glibc: nothing to tune)."""
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
