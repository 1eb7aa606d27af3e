"""The no-cycle rule of the read loop (tests/test_bounded.py, and compiled in tests/test_compiled.py): decoding a
capture, after a warm-up pass that may fill module-level caches, leaves nothing for the collector."""
from __future__ import annotations

import gc
from pathlib import Path


def cycles_left(captures: list[Path]) -> dict[str, int]:
    """Each capture whose decode left unreachable cycles, with the number of objects in them."""
    from protodump.session import packets
    for path in captures:                  # warm-up: lazy imports and caches made once
        for packet in packets(path):
            packet.info
    cyclic = {}
    was = gc.isenabled()
    try:
        for path in captures:
            gc.collect()
            gc.disable()
            for packet in packets(path):
                packet.info
                packet.index()
            found = gc.collect()
            if found:
                cyclic[path.name] = found
    finally:
        if was:
            gc.enable()
    return cyclic
