"""A TCP connection captured in one direction only (asymmetric routing, a tap on one side), against tshark 4.0 +
plugin (standard_run): recorded for real on loopback (tools/netns_record.py), then cut to each side's segments.
The server's side: a SYN-ACK with a window scale option but no SYN (the window stays scaled), and 1,300 data
segments whose ACKs are not in the capture (the bytes in flight grow for tshark's 10,000 unacknowledged segments,
not 1,000); under -2 the SYN-ACK, first frame of its conversation, adds SYNACK to the completeness the frames
after it show. The client's side: a SYN and the first pure ACK give the iRTT without a SYN-ACK. With -x, the data
protocol's own hex dump is not printed under its line (print.c prints it only when the packet's bytes are not)."""
from __future__ import annotations

import sys
from pathlib import Path

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_std_details import same_as_tshark

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import netns_record  # noqa: E402

PORT = 12355        # no game protocol's: the payload is tshark's data protocol
SEGMENTS = 1300


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> dict[str, Path]:
    reason = netns_record.available()
    if reason is not None:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("one-direction")
    whole = tmp / "whole.pcap"
    script = [("c2s", b"hello\n")] + [("s2c", b"%05d" % i * 10) for i in range(SEGMENTS)] + [("close", "s2c")]
    netns_record.record_tcp(script, str(whole), server_port=PORT)
    out = {}
    for side, port_of in (("server", lambda tcp: tcp.sport), ("client", lambda tcp: tcp.dport)):
        path = out[side] = tmp / f"{side}.pcap"
        with open(whole, "rb") as f, open(path, "wb") as g:
            reader = dpkt.pcap.Reader(f)
            writer = dpkt.pcap.Writer(g, snaplen=reader.snaplen, linktype=reader.datalink(), nano=False)
            for ts, buf in reader:
                tcp = dpkt.ethernet.Ethernet(buf).data.data
                if port_of(tcp) == PORT:
                    writer.writepkt(buf, ts)
    return out


def test_the_capture_is_what_the_tests_need(sides, protodump_run):
    fields = protodump_run("-T", "fields", "-e", "tcp.flags.syn", "-e", "tcp.flags.ack", "-e", "tcp.len",
                           str(sides["server"])).stdout.split("\n")
    assert fields[0] == "1\t1\t0"            # a SYN-ACK, no SYN
    assert sum(1 for line in fields if line.endswith("\t50")) == SEGMENTS > 1000
    client = protodump_run("-T", "fields", "-e", "tcp.srcport", str(sides["client"])).stdout.split()
    assert set(client) != {str(PORT)} and str(PORT) not in client


@pytest.mark.parametrize("side, args", [
    ("server", ("-T", "fields", "-e", "frame.number", "-e", "tcp.analysis.bytes_in_flight", "-e",
                "tcp.analysis.push_bytes_sent", "-e", "tcp.window_size", "-e", "tcp.window_size_scalefactor")),
    ("server", ("-Y", "frame.number <= 3 or frame.number >= 1200", "-V", "-x")),
    ("server", ("-Y", "frame.number == 1100", "-T", "json")),
    ("server", ("-2", "-Y", "frame.number <= 3", "-V")),
    ("client", ("-V", "-x")),
    ("client", ("-V",)),
    ("client", ("-T", "fields", "-e", "frame.number", "-e", "tcp.analysis.initial_rtt")),
])
def test_one_direction_as_tshark(sides, side, args, protodump_run, standard_run):
    same_as_tshark(sides[side], args, protodump_run, standard_run)


def test_bytes_in_flight_grow_past_a_thousand_segments(sides, protodump_run):
    rows = protodump_run("-T", "fields", "-e", "tcp.analysis.bytes_in_flight", str(sides["server"])).stdout.split()
    assert max(int(r) for r in rows) > 1100 * 50


def test_the_data_hex_dump_goes_with_x(sides, protodump_run):
    plain = protodump_run("-Y", "data", "-V", str(sides["client"])).stdout
    with_bytes = protodump_run("-Y", "data", "-V", "-x", str(sides["client"])).stdout
    assert "Data (6 bytes)\n\n0000  68 65 6c 6c 6f 0a " in plain
    assert "Data (6 bytes)\n    Data: 68656c6c6f0a\n" in with_bytes


def _stored(table) -> int:
    return sum(len(flow.segments) for conn in table.connections.values() for flow in conn.flows.values())


def test_all_connections_share_one_bound_on_unacknowledged_segments(sides, monkeypatch):
    """MAX_UNACKED_TOTAL: past it no connection stores a new unacknowledged segment (the memory of a flood of
    one-direction connections stays bounded); the bytes in flight then stop growing, as past MAX_UNACKED."""
    from protodump.capture import tcp_analysis
    from protodump.capture.decode import decode
    from protodump.capture.files import open_capture
    from protodump.capture.sctp import TsnTable
    monkeypatch.setattr(tcp_analysis, "MAX_UNACKED_TOTAL", 500)
    table, tsn, in_flight = tcp_analysis.TcpTable(), TsnTable(), []
    for frame in open_capture(sides["server"]):
        d = decode(frame, table, tsn)
        assert table.unacked == _stored(table) <= 500
        if d.tcp is not None and d.tcp.bif:
            in_flight.append(d.tcp.bif)
    assert table.unacked == 500 and max(in_flight) == in_flight[-1] < 600 * 50


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 40), st.integers(0, 40),
                          st.sampled_from(["A", "PA", "FA", "S", "SA", "R"])), min_size=1, max_size=60))
def test_the_count_of_unacknowledged_segments_follows_the_lists(steps):
    """Whatever the segments (either side, any ports of a few connections, data or not, any acknowledgement,
    SYN, FIN, RST), the table's count is what its connections' lists hold."""
    from scapy.all import IP, TCP, Ether
    from protodump.capture import tcp_analysis
    from protodump.capture.decode import decode
    from protodump.capture.files import RawFrame
    from protodump.capture.sctp import TsnTable
    table, tsn = tcp_analysis.TcpTable(), TsnTable()
    for number, (c2s, conn, seq, ack, flags) in enumerate(steps, 1):
        a, b = ("10.0.0.1", 40000 + conn), ("10.0.0.2", 80)
        (src, sport), (dst, dport) = (a, b) if c2s else (b, a)
        data = bytes(Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags, seq=1000 + seq * 10,
                                                        ack=5000 + ack * 10) / (b"x" * 10 if seq % 3 else b""))
        decode(RawFrame(number, number * 1000, len(data), len(data), 1, 0, data), table, tsn)
        assert table.unacked == _stored(table)
    for key in list(table.connections):
        table.forget(key)
    assert table.unacked == 0
