"""Whole frames, standard layers included, as tshark + the generated plugin shows them: -T json (every layer but
the plugin's own `_ws.lua.fake` items), the summary line and -V, frame by frame, on every bundled capture.

Frames left out are listed in KNOWN with the reason; the test prints each capture's share of identical frames.
"""
from __future__ import annotations

import pytest

from conftest import VARIANTS, variant_id
from whole_frame import compare

WS_FRAGMENTS = "tshark 4.0's websocket hands a fragmented message over only at its end (docs/tshark-formats.md 7)"
WS_CHECKS = "protodump's own websocket checks (RSV bits, opcode, masking, control frame size, inflate errors) " \
            "that tshark 4.0's websocket dissector does not make"
GAME_INFO = "several Lua dissector calls in one frame: tshark keeps one game Info where protodump lists each"
# capture -> {frame: why it is left out}
KNOWN: dict[str, dict[int, str]] = {
    "freeblox-plain.pcap": {n: WS_FRAGMENTS for n in (123, 124, 125, 126)},
    "freeblox-burst.pcap": {13: GAME_INFO, 23: GAME_INFO},
    "websocket-bad.pcap": {n: WS_CHECKS for n in (9, 11, 12, 14, 15, 16, 18, 20, 21, 22, 23, 24, 26)},
}


def _known(name: str) -> dict[int, str]:
    return KNOWN.get(name, {})


@pytest.fixture(scope="module", params=VARIANTS, ids=variant_id)
def runs(request, protodump_run, tshark_run):
    name, extra = request.param
    return name, extra, protodump_run, tshark_run


def test_whole_frame_json(runs):
    name, extra, ours, theirs = runs
    a, b = ours("-T", "json", *extra, name), theirs("-T", "json", *extra, "-r", name)
    same, compared, left_out, differ = compare(a.stdout, b.stdout)
    known = _known(name)
    unexplained = [(n, where) for n, where in differ if n not in known]
    assert not [n for n, _ in left_out if n == 0], left_out
    print(f"{name}: {same}/{compared} frames identical ({100 * same / max(compared, 1):.1f} %)")
    assert not unexplained, f"{name}: {len(unexplained)} frame(s) differ: {unexplained[:5]}"


def _frames(text: str) -> list[str]:
    """-V output cut into frames (each starts with "Frame N:")."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("Frame ") and ": " in line and line.split(":")[0][6:].isdigit():
            out.append("")
        if out:
            out[-1] += line + "\n"
    return out


def test_whole_frame_verbose(runs):
    name, extra, ours, theirs = runs
    a, b = _frames(ours("-V", *extra, name).stdout), _frames(theirs("-V", *extra, "-r", name).stdout)
    assert len(a) == len(b)
    differ = [i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y and i + 1 not in _known(name)]
    assert not differ, f"{name}: -V differs in frames {differ[:10]}"


def test_summary_lines(runs):
    name, extra, ours, theirs = runs
    a, b = ours(*extra, name).stdout.splitlines(), theirs(*extra, "-r", name).stdout.splitlines()
    assert len(a) == len(b)
    differ = [(x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y and i + 1 not in _known(name)]
    assert not differ, differ[:3]


@pytest.mark.parametrize("args", [
    ("-Y", "frame.time_epoch > 1795285865.5"),
    ("-Y", "blank.seq > 1000", "-t", "dd"),
    ("-Y", "blank.seq > 1000", "-t", "d"),
    ("-t", "e", "-c", "5"), ("-t", "ad", "-c", "5"), ("-t", "adoy", "-c", "5"), ("-t", "u", "-c", "5"),
    ("-t", "ud", "-c", "5"), ("-t", "udoy", "-c", "5"), ("-t", "a", "-c", "5"), ("-t", "r", "-c", "5"),
    ("-Y", "frame.time_relative > 7.9", "-T", "fields", "-e", "frame.number", "-e", "frame.time_relative",
     "-e", "frame.time_delta", "-e", "frame.time_delta_displayed", "-e", "frame.time", "-e", "udp.stream",
     "-e", "udp.time_delta"),
])
def test_time_column_and_fields(args, protodump_run, tshark_run):
    """The time column counts from the capture's first frame whatever -Y shows; -t formats; frame.time*."""
    name = "blank-server-session.pcap"
    ours, theirs = protodump_run(*args, name), tshark_run(*args, "-r", name)
    assert ours.stdout and ours.stdout == theirs.stdout


@pytest.mark.parametrize("name", ["rutentoy-lost-reordered.pcap", "blank-bad.pcap", "iceball-tcp-bad.pcap",
                                  "rutentoy-sctp.pcap", "freeblox-session.pcap", "enet-bad.pcap", "rutentoy-bad.pcap"])
def test_expert_statistic(name, protodump_run, tshark_run):
    """-z expert: the standard layers' experts (TCP analysis, connection chats) counted with the game ones."""
    ours, theirs = protodump_run("-q", "-z", "expert", name), tshark_run("-q", "-z", "expert", "-r", name)
    assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("expr", ["tcp.analysis.flags", "_ws.expert", "_ws.malformed", "_ws.expert.severity == warning",
                                  '_ws.expert.group == "Malformed"', "tcp.analysis.lost_segment",
                                  "tcp.connection.syn", "tcp.port == 29778 && tcp.flags.syn == 1", "udp.port == 12354",
                                  'ip.host == "127.0.0.1" && frame.time_delta > 0.0001', "tcp.stream == 0",
                                  'eth.addr.oui_resolved contains "Xerox"', "udp.stream == 0 && udp.time_delta > 0.001"])
@pytest.mark.parametrize("name", ["rutentoy-lost-reordered.pcap", "blank-bad.pcap", "iceball-tcp-bad.pcap"])
def test_standard_fields_filter(expr, name, protodump_run, tshark_run):
    args = ("-Y", expr, "-T", "fields", "-e", "frame.number")
    assert protodump_run(*args, name).stdout == tshark_run(*args, "-r", name).stdout
