#!/usr/bin/env python3
"""Per capture: how protodump's -T json compares with tshark + the generated plugin's.

    python tools/parity_report.py captures/*.pcap*           # the game layers: how many, how many differ
    python tools/parity_report.py --whole captures/*.pcap*   # whole frames: the share identical, and where not

`--whole` compares every layer of every frame (wslua's `_ws.lua.fake` items included, tests/whole_frame.py),
once as the capture is and once per -d/-o variant the tests run it with (tests/conftest.py VARIANTS); it lists each
frame that differs with the first place it does, and exits 1 when a capture has fewer than --min-share % of its
frames identical (issue 10's target: 99). Run it with the Python protodump is installed in (`pip install -e .`):
the tools use the installed package, as the tests do.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import VARIANTS, layers_of, packet_layers, tshark_cmd_run  # noqa: E402  (the tests' helpers)
from whole_frame import compare  # noqa: E402

try:
    from protodump.dissectors import PROTOCOLS
except ModuleNotFoundError as e:     # the repository root is no package: protodump must be installed
    sys.exit(f"parity_report: {e}; install it first (pip install -e {ROOT}) and run this with that Python")

NAMES = [p.name for p in PROTOCOLS if getattr(p, "lua", True) and getattr(p, "lua_parity", True)]
PROTODUMP = [sys.executable, "-c", "from protodump.cli.main import main; main()"]
PLUGIN = ROOT / "lua" / "protodump.lua"


def json_of(capture: str, extra=()) -> tuple[str, str]:
    """(protodump's, tshark + plugin's) -T json of the capture."""
    ours = subprocess.run([*PROTODUMP, "-T", "json", *extra, capture], capture_output=True, text=True).stdout
    # tshark as the tests run it: unprivileged when root (Wireshark >= 4.2 runs no Lua as root), clean configuration
    theirs = tshark_cmd_run(["-X", f"lua_script:{PLUGIN}", "-r", capture, "-T", "json", *extra], text=True).stdout
    return ours, theirs


def report(capture: str, totals: dict) -> str:
    ours_text, theirs_text = json_of(capture)
    ours, theirs = packet_layers(ours_text), packet_layers(theirs_text)
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


def whole(capture: str, extra=()) -> tuple[str, float, list[str]]:
    """(row of the table, share of frames identical, lines naming the frames that are not)."""
    ours, theirs = json_of(capture, extra)
    same, _, left_out, differ = compare(ours, theirs)
    frames = len(packet_layers(theirs))
    share = 100 * same / frames if frames else 100.0
    name = Path(capture).name + (f" [{' '.join(extra)}]" if extra else "")
    row = f"| {name} | {frames} | {same} | {share:.1f} % | {len(left_out)} | {len(differ)} |"
    lines = [f"  {name} frame {n}: {why}" for n, why in left_out]
    lines += [f"  {name} frame {n}: {where}" for n, where in differ]
    return row, share, lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--whole", action="store_true", help="compare whole frames (every layer), not the game ones")
    parser.add_argument("--min-share", type=float, default=99.0,
                        help="--whole: the share of identical frames every capture must reach (default 99)")
    parser.add_argument("captures", nargs="+")
    args = parser.parse_args(argv)
    if args.whole:
        print("| capture | frames | identical | share | frame count differs | differ |")
        print("|---|---|---|---|---|---|")
        notes, worst = [], 100.0
        for capture in args.captures:
            name = Path(capture).name
            for extra in [()] + [extra for n, extra in VARIANTS if n == name and extra]:
                row, share, lines = whole(capture, extra)
                print(row, flush=True)
                notes += lines
                worst = min(worst, share)
        if notes:
            print("\nFrames not identical (the first difference of each):")
            print("\n".join(notes))
        return 1 if worst < args.min_share else 0
    totals: dict = {}
    for capture in args.captures:
        print(report(capture, totals))
    print("total: " + "; ".join(f"{name} {n} layers, {d} differ" for name, (n, d) in totals.items()))
    return 1 if any(d for _, d in totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
