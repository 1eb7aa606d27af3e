"""MPTCP (TCP option kind 30) against tshark 4.0 + plugin (standard_run): every subtype on hand-made frames (each
its own connection: tests/mptcp_frames.py), the real MPTCP capture's filters and expert counts (its whole frames
are in tests/test_whole_frame.py), and the option decoder on any bytes (hypothesis: never an error other than
tshark's exception, which the option walk turns into the end of the options)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mptcp_frames import MALFORMED, WELL_FORMED, frame, mptcp, write_pcap
from test_std_details import same_as_tshark

from protodump.capture.decode import decode
from protodump.capture.layers import build
from protodump.capture.layers.mptcp import option_item
from protodump.capture.files import RawFrame
from protodump.capture.tcp_analysis import TcpTable
from protodump.engine.tree import Item

MPTCP_CAPTURE = "rutentoy-mptcp.pcap"
TMP = Path(__file__).resolve().parent / "tmp"


def _made(name: str, cases: dict, port: int) -> Path:
    """A pcap in tests/tmp (tshark runs as nobody) of one segment per case, each its own connection."""
    TMP.mkdir(exist_ok=True)
    path = TMP / name
    write_pcap(path, [frame(o, port + i) for i, o in enumerate(cases.values())])
    return path


@pytest.fixture(scope="module")
def subtypes() -> Path:
    return _made("mptcp-subtypes.pcap", WELL_FORMED, 41000)


@pytest.fixture(scope="module")
def malformed() -> Path:
    return _made("mptcp-malformed.pcap", MALFORMED, 43000)


@pytest.mark.parametrize("args", [("-V",), ("-T", "json"), (), ("-q", "-z", "expert")])
def test_subtypes_as_tshark(args, subtypes, protodump_run, standard_run):
    same_as_tshark(subtypes, args, protodump_run, standard_run)


@pytest.mark.parametrize("args", [("-V",), ("-T", "json"), (), ("-q", "-z", "expert"), ("-Y", "_ws.malformed")])
def test_malformed_options_as_tshark(args, malformed, protodump_run, standard_run):
    """An option too short for what its subtype and flags say: tshark's exception ([Malformed Packet: MPTCP],
    counted under MPTCP), the frame's TCP Info kept; the next frame decodes normally."""
    same_as_tshark(malformed, args, protodump_run, standard_run)


@pytest.mark.parametrize("args", [
    ("-Y", "mptcp.stream == 0", "-T", "fields", "-e", "frame.number", "-e", "tcp.stream", "-e", "mptcp.master",
     "-e", "mptcp.analysis.subflows", "-e", "mptcp.expected_token", "-e", "mptcp.ack", "-e", "mptcp.dss.dsn"),
    ("-Y", "tcp.options.mptcp.subtype == 1",),
    ("-q", "-z", "expert"),
])
def test_real_capture_filters(args, protodump_run, standard_run):
    """The real MPTCP session (both ends in one namespace, a joined backup subflow, ADD_ADDR both ways)."""
    ours, theirs = protodump_run(*args, MPTCP_CAPTURE), standard_run(*args, "-r", MPTCP_CAPTURE)
    assert ours.stdout and ours.stdout == theirs.stdout


def test_rutentoy_over_mptcp_reaches_the_game_dissector(protodump_run):
    out = protodump_run(MPTCP_CAPTURE).stdout
    assert "rutentoy" in out and "MPTCP" in out
    assert "LOGIN carol" in out


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=38))
def test_option_decoder_never_fails(body):
    """Any option bytes: an item, or tshark's exception (IndexError) with what came before kept."""
    option = mptcp(body)
    data = b"\x00" * 20 + option
    parent = Item(None)
    try:
        option_item(parent, data, 20, len(option), {})
    except IndexError:
        pass
    assert parent.children and parent.children[0].label.startswith("Multipath Transmission Control Protocol")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=30), min_size=1, max_size=4))
def test_frames_with_any_mptcp_options_decode(bodies):
    """Whole frames (one connection) whose options are any MPTCP options: decode and layers never raise."""
    table = TcpTable()
    for i, body in enumerate(bodies):
        opts = mptcp(body)[:40 - 12]
        data = frame(opts, 42000, seq=1000 + i)
        d = decode(RawFrame(i + 1, 1_700_000_000_000_000_000 + i, len(data), len(data), 1, 0, data), tcp_table=table)
        build(d)
        assert d.transport == "tcp"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(min_size=0, max_size=30), st.integers(34, 100)), min_size=1, max_size=4))
def test_frames_cut_anywhere_decode(cuts):
    """Segments with any MPTCP options, cut by a snap length anywhere: decode, layers and Info never raise."""
    table = TcpTable()
    for i, (body, snap) in enumerate(cuts):
        whole = frame(mptcp(body)[:40 - 12], 42100, seq=1000 + i)
        data = whole[:snap]
        d = decode(RawFrame(i + 1, 1_700_000_000_000_000_000 + i, len(data), len(whole), 1, 0, data),
                   tcp_table=table)
        build(d)
        d.plain_info()


def test_key_token_and_idsn():
    """The SHA-256 (version 1) token and initial DSN of a key seen in the real capture (tshark's values)."""
    from protodump.capture.mptcp_analysis import crypto
    assert crypto(1, 0x01, 15508164203803831876) == (454398730, 12170337112966644652)
