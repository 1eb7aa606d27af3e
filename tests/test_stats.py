"""-z statistics against tshark's own -z output on the same captures (standard layers directly, the blank
layer through the generated plugin), plus the CLI contract (-q, --format json, bad arguments)."""
from __future__ import annotations

import json
import re
import subprocess
from collections import Counter, defaultdict
from functools import lru_cache

import pytest

from conftest import CAPTURES, CAPTURES_DIR, PLUGIN, PROTODUMP, TSHARK
from protodump.analysis import stats
from protodump.output import stats_out
from protodump.session import packets
from test_fields_out import divergent_lines

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")

TCP_CAPTURE = "/work/shared/captures/iceball-tcp-session.pcap"
ALL = [str(CAPTURES_DIR / name) for name in CAPTURES] + [TCP_CAPTURE]
TABLES = ["conv,udp", "conv,tcp", "conv,ip", "conv,eth", "endpoints,udp", "endpoints,tcp", "endpoints,ip",
          "endpoints,eth", "conv,sctp", "endpoints,sctp"]
TITLES = {"conv,udp": "UDP Conversations", "conv,tcp": "TCP Conversations", "conv,ip": "IPv4 Conversations",
          "conv,eth": "Ethernet Conversations", "endpoints,udp": "UDP Endpoints", "endpoints,tcp": "TCP Endpoints",
          "endpoints,ip": "IPv4 Endpoints", "endpoints,eth": "Ethernet Endpoints", "conv,sctp": "SCTP Conversations",
          "endpoints,sctp": "SCTP Endpoints"}


def _exists(path):
    import os
    return os.path.exists(path)


CAPS = [p for p in ALL if _exists(p)]
INTERVALS = ["1", "0.5", "0", "0.01", "3", "0.5,udp.srcport==12354,blank.type==0 || udp.length>100"]
IO_CAPS = [str(CAPTURES_DIR / "blank-server-session.pcap"), str(CAPTURES_DIR / "blank-sequence.pcap"), TCP_CAPTURE]


_TSHARK: dict = {}


def tshark_all(path: str) -> str:
    """One tshark run (with the plugin) per capture for every statistic here; tshark prints them last first."""
    args = ["io,phs", "expert", *TABLES] + ([f"io,stat,{i}" for i in INTERVALS] if path in IO_CAPS else [])
    if path not in _TSHARK:
        cmd = [TSHARK, "-n", "-X", f"lua_script:{PLUGIN}", "-r", path, "-q", *[a for z in args for a in ("-z", z)]]
        _TSHARK[path] = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return _TSHARK[path]


def tshark(path: str, *args: str) -> str:
    cmd = [TSHARK, "-n", "-X", f"lua_script:{PLUGIN}", "-r", path, "-q", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module", autouse=True)
def _tshark_in_parallel():
    """The per-capture tshark runs at once (each is mostly start-up time)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(tshark_all, CAPS))
    yield


@lru_cache(maxsize=None)
def decoded(path: str) -> list:
    return list(packets(path))          # each capture decoded once for all the statistics tests


def ours(path: str, *args: str) -> tuple:
    return tuple(stats.run(decoded(path), list(args)))


def section(text: str, title: str) -> list[str]:
    """The lines of one conversation/endpoint table (between its ==== lines) in tshark's combined output."""
    lines = text.splitlines()
    i = lines.index(title)
    j = lines.index("=" * 80, i)
    return lines[i - 1:j + 1]




@pytest.mark.parametrize("memory_rows", [None, 1], ids=["in memory", "spilled to disk"])
@pytest.mark.parametrize("path", CAPS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_conversations_and_endpoints_match_tshark(path, memory_rows, monkeypatch):
    """(Also with one entry of a table in memory, the rest spilled to disk: analysis/spill_table.py.)"""
    from protodump.analysis import stats_conv
    from protodump.capture import manuf
    monkeypatch.setitem(manuf.RESOLVE, "mac", False)       # as tshark -n (tshark_all): Ethernet addresses unnamed
    expected = tshark_all(path)
    if memory_rows is not None:
        monkeypatch.setattr(stats_conv, "MEMORY_ROWS", memory_rows)
    results = ours(path, *TABLES) if memory_rows is None else stats.run(decoded(path), TABLES)
    for table, result in zip(TABLES, results):
        if TITLES[table] not in expected.splitlines():
            assert not (result.get("conversations") or result.get("endpoints")), table
            continue
        got = stats_out.render_text(result).splitlines()
        assert got == section(expected, TITLES[table]), table


PHS_DEPTH = 7     # deeper rows: tshark prints "..." instead of the indentation (its fake levels count too)


def phs_rows(text: str) -> list[tuple]:
    """(depth, protocol, frames, bytes) rows down to PHS_DEPTH, with the plugin's artefacts taken out: the
    _ws.lua.fake levels (one per Lua dissector call, also for a heuristic that said no, which splits a protocol
    in two sibling rows: merged again) and the "frame" root tshark adds when a plugin's field extractors
    (Field.new) make it build every tree."""
    root: dict = {}
    path: list[dict] = []          # the node dict at each raw depth
    for line in text.splitlines():
        m = re.match(r"^( *)(\S+)\s+frames:(\d+) bytes:(\d+)$", line)
        if not m or m.group(2).startswith("..."):
            continue
        depth = len(m.group(1)) // 2
        del path[depth:]
        parent = path[-1] if path else root
        if m.group(2) in ("_ws.lua.fake", "frame"):
            path.append(parent)       # a transparent level
            continue
        node = parent.setdefault(m.group(2), {"frames": 0, "bytes": 0, "kids": {}})
        node["frames"] += int(m.group(3))
        node["bytes"] += int(m.group(4))
        path.append(node["kids"])
    rows = []

    def walk(level, depth):
        for name, node in level.items():
            if depth <= PHS_DEPTH:
                rows.append((depth, name, node["frames"], node["bytes"]))
                walk(node["kids"], depth + 1)
    walk(root, 0)
    return rows


@pytest.mark.parametrize("path", CAPS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_protocol_hierarchy_matches_tshark(path):
    name = path.rsplit("/", 1)[-1]
    skip = divergent_lines(name)
    if skip:     # frames whose layers differ from tshark's by design (test_fields_out.divergent_lines): left out
        where = "!(frame.number in {" + ",".join(str(i + 1) for i in sorted(skip)) + "})"
        (result,) = ours(path, f"io,phs,{where}")
        theirs = subprocess.run([TSHARK, "-n", "-X", f"lua_script:{PLUGIN}", "-r", path, "-q", "-z", f"io,phs,{where}"],
                                capture_output=True, text=True, check=True).stdout
        assert phs_rows(stats_out.render_text(result)) == phs_rows(theirs)
        return
    (result,) = ours(path, "io,phs")
    text = stats_out.render_text(result)
    assert phs_rows(text) == phs_rows(tshark_all(path))
    assert text.splitlines()[:5] == ["", "=" * 67, "Protocol Hierarchy Statistics", "Filter: ", ""]


@pytest.mark.parametrize("path", [p for p in CAPS if "blank" in p], ids=lambda p: p.rsplit("/", 1)[-1])
def test_expert_matches_tshark_with_plugin(path):
    (result,) = ours(path, "expert")
    out = tshark_all(path)        # ... conversation tables, the expert sections, then io,phs
    head = out[:out.index("\n" + "=" * 67 + "\nProtocol Hierarchy Statistics")]
    expected = head[head.rindex("=" * 80 + "\n") + 81:]
    assert (stats_out.render_text(result) if result["sections"] else "") == expected


@pytest.mark.parametrize("interval", INTERVALS)
@pytest.mark.parametrize("path", IO_CAPS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_io_stat_matches_tshark(path, interval):
    if not _exists(path):
        pytest.skip("capture not present")
    (result,) = ours(path, f"io,stat,{interval}")
    got = stats_out.render_text(result).splitlines()
    # one tshark run for all the intervals: it prints the tables in reverse order, blank-line separated
    out = tshark_all(path)
    tables = [t for t in out.split("\n\n") if "IO Statistics" in t][::-1]
    lines = tables[INTERVALS.index(interval)].strip("\n").splitlines()
    expected = [""] + lines[:lines.index(lines[0], 1) + 1]       # up to the closing ==== border
    # tshark 4.0 prints a whole-second duration's microseconds unpadded ("8. 11280"): we print "8.011280"
    assert [line for line in got if "Duration" not in line] == [line for line in expected if "Duration" not in line]
    dur = next(line for line in got if "Duration" in line)
    tdur = next(line for line in expected if "Duration" in line)
    assert len(dur) == len(tdur) and re.sub(r"[ .0]", "", dur) == re.sub(r"[ .0]", "", tdur)


def test_blank_types_match_tshark_fields_with_plugin():
    path = str(CAPTURES_DIR / "blank-all-current.pcap")       # every message type, both directions
    (result,) = ours(path, "blank,types")
    out = tshark(path, "-T", "fields", "-e", "udp.srcport", "-e", "blank.type", "-e", "udp.length")
    expected = defaultdict(lambda: [0, 0])
    client_port = None
    for line in out.splitlines():
        port, typ, length = line.split("\t")
        client_port = client_port or port
        e = expected[("c2s" if port == client_port else "s2c", int(typ))]
        e[0] += 1
        e[1] += int(length) - 8
    (conv,) = result["conversations"]
    got = {}
    for t in conv["types"]:
        value = int(re.search(r"\((\d+)\)$", t["type"]).group(1))
        for d in ("c2s", "s2c"):
            if t[f"{d}_packets"]:
                got[(d, value)] = [t[f"{d}_packets"], t[f"{d}_bytes"]]
    assert got == dict(expected)
    assert sum(n for n, _ in got.values()) == 26 and len(got) >= 13


@pytest.mark.parametrize("name", ["blank-sequence.pcap", "blank-bad.pcap"])
def test_blank_seq_matches_tshark_expert_infos(name):
    path = str(CAPTURES_DIR / name)
    (result,) = ours(path, "blank,seq")
    out = tshark(path, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "udp.srcport",
                 "-e", "blank", "-e", "_ws.expert.message")
    expected = defaultdict(Counter)
    for line in out.splitlines():
        port, blank, messages = (line.split("\t") + ["", ""])[:3]
        if not blank:
            continue
        c = expected[int(port)]
        c["packets"] += 1
        for m in filter(None, messages.split("|")):
            lost = re.match(r"(\d+) lost before seq", m)
            if lost:
                c["lost"] += int(lost.group(1))
            c["duplicates"] += m.startswith("Duplicate")
            c["out_of_order"] += m.startswith("Out of order")
    got = {int(d["source"].rsplit(":", 1)[1]): Counter({k: d[k] for k in ("packets", "lost", "duplicates",
                                                                          "out_of_order") if d[k]})
           for d in result["directions"]}
    assert got == {port: +c for port, c in expected.items()}
    assert any(c["lost"] for c in got.values())


def run_cli(*args):
    return subprocess.run([*PROTODUMP, *args], capture_output=True, text=True)


def test_cli_quiet_prints_only_statistics_and_json():
    path = str(CAPTURES_DIR / "blank-sequence.pcap")
    r = run_cli("-q", "-z", "conv,udp", "-z", "io,phs", path)
    assert r.returncode == 0
    # tshark's order: the last -z first
    assert r.stdout.index("Protocol Hierarchy") < r.stdout.index("=" * 80 + "\nUDP Conversations") and "blank" in r.stdout
    r = run_cli("-z", "io,phs", path)
    assert r.stdout.splitlines()[0].lstrip().startswith("1 ") and "Protocol Hierarchy" in r.stdout
    r = run_cli("-q", "--format", "json", "-z", "endpoints,udp", "-z", "blank,seq", path)
    data = json.loads(r.stdout)["statistics"]
    assert [d["kind"] for d in data] == ["endpoints", "blank_seq"]
    assert data[0]["endpoints"][0] == {"address": "127.0.0.1", "port": 40123, "packets": 24, "bytes": 2052,
                                       "tx_packets": 12, "tx_bytes": 1278, "rx_packets": 12, "rx_bytes": 774}


@pytest.mark.parametrize("arg", ["bogus", "io,stat", "io,stat,abc", "io,stat,-1", "conv,foo", "io,phs,(",
                                 "follow,udp,hexx,0", "follow,udp,hex", "follow,udp,hex,1.2.3.4:x,1.2.3.4:5",
                                 "blank,types,extra"])
def test_bad_z_arguments_exit_1_without_traceback(arg):
    """tshark's exit code for a bad -z argument is 1; its message one line (an unknown name: the list). (A bad
    filter of expert's goes to standard output, as tshark's: test_cli_tshark's test_bad_filter_in_a_statistic.)"""
    from click.testing import CliRunner
    from protodump.cli.main import cli
    r = CliRunner().invoke(cli, ["-q", "-z", arg, str(CAPTURES_DIR / "blank-sequence.pcap")])
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit)           # a usage error, not a crash
    errors = [line for line in r.stderr.splitlines() if line.startswith("protodump:")]
    assert len(errors) == 1 and ("-z" in errors[0] or "filter" in errors[0]), r.stderr
    assert r.stdout == ""


def test_terminal_tables_never_cut_data():
    """On an 80-column terminal a table too wide for it is printed in tshark's plain layout, nothing cut; a
    narrow one as a rich table, every cell whole."""
    import io
    from rich.console import Console
    from protodump.analysis import stats as stats_mod
    from protodump.output import stats_out

    results = stats_mod.run(decoded(str(CAPTURES_DIR / "blank-server-session.pcap")), ["conv,udp", "blank,seq"])

    class Tty(io.StringIO):
        def isatty(self):
            return True
    out = Tty()
    import unittest.mock
    with unittest.mock.patch("rich.console.Console", lambda file, **kw: Console(file=file, width=80,
                                                                                 force_terminal=True, **kw)):
        stats_out.write(results, out)
    text = out.getvalue()
    assert "…" not in text
    assert "127.0.0.1:35367" in text                 # the wide conversation table: plain layout, whole
    assert "UDP Conversations" in text


@pytest.mark.parametrize("resolve", [(), ("-n",)], ids=["names", "n"])
def test_ethernet_tables_name_addresses_as_tshark(resolve, protodump_run, standard_run):
    """Without -n tshark's Ethernet conversation and endpoint tables show resolved names (00:00:00_00:00:00 for a
    loopback capture's zero addresses, a vendor's short name with the rest); with -n the addresses."""
    capture = str(CAPTURES_DIR / "blank-server-session.pcap")
    args = (*resolve, "-q", "-z", "conv,eth", "-z", "endpoints,eth")
    ours, theirs = protodump_run(*args, capture), standard_run(*args, "-r", capture)
    assert ours.stdout == theirs.stdout
    assert ("00:00:00_00:00:00" in ours.stdout) == (not resolve)
