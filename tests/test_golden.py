"""protodump's -V and -T json outputs of every capture equal the reviewed goldens in captures/golden/
(rewrite them with `python tools/make_captures.py --golden` after an intended change, and review the diff)."""
from __future__ import annotations

import difflib

import pytest

from conftest import CAPTURES, GOLDEN_DIR, golden_commands

CASES = [(name, golden, args) for name in CAPTURES for golden, args in golden_commands(name).items()]


def readable_diff(expected: str, actual: str, name: str, limit: int = 80) -> str:
    """A unified diff of the region around the first difference (difflib on whole 15 MB outputs is too slow)."""
    a, b = expected.splitlines(), actual.splitlines()
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    tail = 0
    while tail < min(len(a), len(b)) - first and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo = max(0, first - 3)
    window_a, window_b = a[lo:min(len(a) - tail, first + 200) + 3], b[lo:min(len(b) - tail, first + 200) + 3]
    lines = list(difflib.unified_diff(window_a, window_b, f"golden/{name}", "protodump", lineterm="", n=2))
    more = f"\n... {len(lines) - limit} more diff lines" if len(lines) > limit else ""
    return (f"first difference at line {first + 1} ({len(a)} golden lines, {len(b)} output lines)\n"
            + "\n".join(lines[:limit]) + more)


def test_every_capture_has_goldens():
    missing = [g for name in CAPTURES for g in golden_commands(name) if not (GOLDEN_DIR / g).exists()]
    assert not missing, f"missing goldens (python tools/make_captures.py --golden): {missing}"


@pytest.mark.parametrize("name,golden,args", CASES, ids=[c[1] for c in CASES])
def test_golden(protodump_run, name, golden, args):
    path = GOLDEN_DIR / golden
    if not path.exists():
        pytest.fail(f"{path} is missing: python tools/make_captures.py --golden")
    run = protodump_run(*args)
    assert run.returncode == 0, run.stderr
    expected = path.read_bytes().decode("utf-8")
    if run.stdout != expected:
        pytest.fail(f"protodump {' '.join(args)} differs from golden/{golden}:\n"
                    + readable_diff(expected, run.stdout, golden), pytrace=False)
