"""Conversation and endpoint tables that spill to disk (analysis/spill_table.py): a flood of conversations keeps a
bounded number of entries in memory, and the tables come out as they do when everything stays in memory (and as
tshark's: tests/test_stats.py runs its comparison with tiny spill limits too)."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import lru_cache
from itertools import zip_longest
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import CAPTURES_DIR, PROTODUMP
from protodump.analysis import stats, stats_conv
from protodump.analysis.spill_table import LazyRows
from protodump.session import packets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import replay  # noqa: E402

TABLES = ["conv,udp", "conv,tcp", "conv,ip", "conv,eth", "endpoints,udp", "endpoints,tcp", "endpoints,ip"]


@lru_cache(maxsize=None)
def flood(frames: int = 3000) -> tuple[Path, list]:
    """Conversations of every family, each seen once (tools/replay.py --kind opened-once), decoded."""
    path = Path(tempfile.mkdtemp(prefix="protodump-flood-")) / "flood.pcap"
    replay.write(path, "opened-once", frames)
    return path, list(packets(str(path)))


def tables(pkts, args, memory_rows, monkeypatch) -> tuple[list[dict], list]:
    monkeypatch.setattr(stats_conv, "MEMORY_ROWS", memory_rows)
    taps = stats.make_taps(args)
    for packet in pkts:
        for tap in taps:
            tap.add(packet)
    return [tap.result() for tap in taps], taps


def listed(result):
    return result.get("conversations", result.get("endpoints"))


def rows(result) -> list[dict]:
    return list(listed(result))


def test_a_flood_of_conversations_keeps_a_bounded_table_in_memory(monkeypatch):
    _, pkts = flood()
    whole, _ = tables(pkts, TABLES, 10**9, monkeypatch)
    spilled, taps = tables(pkts, TABLES, 100, monkeypatch)
    for arg, tap, a, b in zip(TABLES, taps, whole, spilled):
        table = tap.convs if arg.startswith("conv") else tap.ends
        if arg == "conv,eth":            # (every frame between the same two loopback MACs)
            assert not table.spilled and len(rows(b)) == 1
            continue
        assert table.spilled and len(table) <= 100, arg
        assert isinstance(listed(b), LazyRows) and not isinstance(listed(a), LazyRows)
        assert len(rows(a)) > 1000 and len(rows(b)) == len(rows(a)), arg
        assert rows(b) == rows(a), arg           # read twice from disk: the same rows
        assert listed(b) == listed(a) and len(listed(b)) == len(listed(a)), arg


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(memory_rows=st.integers(1, 12), picks=st.lists(st.booleans(), min_size=40, max_size=400),
       capture=st.sampled_from(["rutentoy-lossy.pcap", "freeblox-session.pcap", "blank-server-session.pcap",
                                "iceball-enet-session.pcap"]))
def test_spilling_never_changes_a_table(memory_rows, picks, capture, monkeypatch):
    """Any subsequence of a real capture's packets interleaved with the flood's (new conversations push the real
    ones to disk, and they come back from either side), any limit: the same rows as in memory, in the same order
    (busiest first, first seen first among equals)."""
    mixed = [p for pair in zip_longest(real(capture), flood()[1][:300]) for p in pair if p is not None]
    pkts = [p for p, keep in zip(mixed, picks * 20) if keep]
    whole, _ = tables(pkts, TABLES, 10**9, monkeypatch)
    spilled, _ = tables(pkts, TABLES, memory_rows, monkeypatch)
    assert [rows(r) for r in spilled] == [rows(r) for r in whole]


@lru_cache(maxsize=None)
def real(name: str) -> list:
    path = CAPTURES_DIR / name
    return list(packets(str(path)))[:300] if path.exists() else []


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_cli_prints_a_spilled_table_as_one_in_memory(fmt, tmp_path):
    """protodump itself, with its limit lowered to 50 entries in memory: the same bytes as the default."""
    path, _ = flood()
    args = ["-q", "--format", fmt, *(a for t in TABLES for a in ("-z", t)), str(path)]
    default = subprocess.run([*PROTODUMP, *args], capture_output=True, check=True, timeout=120).stdout
    script = tmp_path / "low.py"
    script.write_text("import sys\nfrom protodump.analysis import stats_conv\nstats_conv.MEMORY_ROWS = 50\n"
                      "from protodump.cli.main import main\nsys.argv[0] = 'protodump'\nmain()\n")
    low = subprocess.run([sys.executable, str(script), *args], capture_output=True, check=True, timeout=120).stdout
    assert low == default and default.count(b"\n") > 10000
    if fmt == "json":
        assert max(len(r.get("endpoints", ())) for r in json.loads(low)["statistics"]) > 1000
