#!/usr/bin/env python3
"""Per capture: how many game layers protodump and tshark + the generated plugin print with -T json, and how many
differ (the figures tests/test_parity.py asserts, as a table).

    python tools/parity_report.py captures/*.pcap
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import layers_of, packet_layers, tshark_cmd_run  # noqa: E402  (the tests' helpers)

from protodump.dissectors import PROTOCOLS  # noqa: E402

NAMES = [p.name for p in PROTOCOLS if getattr(p, "lua", True) and getattr(p, "lua_parity", True)]
PROTODUMP = [sys.executable, "-c", "from protodump.cli.main import main; main()"]


def report(capture: str, totals: dict) -> str:
    ours = packet_layers(subprocess.run([*PROTODUMP, "-T", "json", capture], capture_output=True, text=True).stdout)
    # tshark as the tests run it: unprivileged when root (Wireshark >= 4.2 runs no Lua as root), clean configuration
    theirs = packet_layers(tshark_cmd_run(["-X", f"lua_script:{ROOT / 'lua' / 'protodump.lua'}", "-r", capture,
                                           "-T", "json"], text=True).stdout)
    parts = []
    for name in NAMES:
        count = sum(len(layers_of(p, name)) for p in ours)
        if not count:
            continue
        differ = sum(1 for a, b in zip(ours, theirs) if layers_of(a, name) != layers_of(b, name))
        differ += abs(len(ours) - len(theirs))
        parts.append(f"{name} {count} layers, {differ} differ")
        total = totals.setdefault(name, [0, 0])
        total[0] += count
        total[1] += differ
    return f"{Path(capture).name}: {len(ours)} frames: " + "; ".join(parts)


def main(argv: list[str]) -> int:
    totals: dict = {}
    for capture in argv:
        print(report(capture, totals))
    print("total: " + "; ".join(f"{name} {n} layers, {d} differ" for name, (n, d) in totals.items()))
    return 1 if any(d for _, d in totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
