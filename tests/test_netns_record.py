"""Tests for tools/netns_record.py: record real loopback traffic, read it back with tshark."""
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

TOOL = os.path.join(os.path.dirname(__file__), "..", "tools", "netns_record.py")
_spec = importlib.util.spec_from_file_location("netns_record", TOOL)
nr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nr)

_reason = nr.available() or (None if shutil.which("tshark") else "tshark not found")
pytestmark = pytest.mark.skipif(_reason is not None, reason=f"cannot record: {_reason}")


def tshark(path, *fields, opts=()):
    cmd = ["tshark", "-r", str(path), *opts, "-T", "fields"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL).stdout
    return [line.split("\t") for line in out.splitlines()]


def pcap_header(path):
    with open(path, "rb") as f:
        magic, _, _, _, _, _, linktype = struct.unpack("<IHHiIII", f.read(24))
    return magic, linktype


def test_udp_ipv4_payloads_ports_order(tmp_path):
    garbage = bytes(range(256)) * 3 + b"\x00\xff"
    grams = [("c2s", b"hello"), ("s2c", b""), ("c2s", b"x" * 9000),
             ("s2c", garbage), ("c2s", bytes(65507))]
    out = tmp_path / "u.pcap"
    nr.record_udp(grams, out, server_port=23456, client_port=40001)
    rows = tshark(out, "udp.srcport", "udp.dstport", "udp.payload")
    assert len(rows) == len(grams)
    for (direction, payload), (sport, dport, hexpl) in zip(grams, rows):
        want = ("40001", "23456") if direction == "c2s" else ("23456", "40001")
        assert (sport, dport) == want
        assert bytes.fromhex(hexpl) == payload
    assert pcap_header(out) == (0xA1B2C3D4, 1)  # microsecond pcap, Ethernet


def test_udp_ipv6(tmp_path):
    grams = [("c2s", b"\x01\x02"), ("s2c", b"\xfe" * 20000), ("c2s", b"")]
    out = tmp_path / "u6.pcap"
    nr.record_udp(grams, out, server_addr="::1", server_port=5353)
    rows = tshark(out, "ipv6.src", "ipv6.dst", "udp.srcport", "udp.dstport", "udp.payload")
    assert [bytes.fromhex(r[4]) for r in rows] == [p for _, p in grams]
    assert all(r[0] == r[1] == "::1" for r in rows)
    assert [r[3] for r in rows] == ["5353", rows[0][2], "5353"]


@pytest.mark.parametrize("linktype,dlt,nano", [("cooked", 113, False), ("cooked2", 276, True)])
def test_udp_cooked_and_nano(tmp_path, linktype, dlt, nano):
    out = tmp_path / "c.pcap"
    nr.record_udp([("c2s", b"ab"), ("s2c", b"cd")], out, linktype=linktype, nano=nano)
    assert pcap_header(out) == (0xA1B23C4D if nano else 0xA1B2C3D4, dlt)
    rows = tshark(out, "frame.protocols", "udp.payload", "udp.srcport")
    assert [r[:2] for r in rows] == [["sll:ethertype:ip:udp:data", "6162"], ["sll:ethertype:ip:udp:data", "6364"]]
    # the client's port is the kernel's choice, from a range where tshark decodes nothing else
    low, high = nr.EPHEMERAL_PORTS
    assert low <= int(rows[0][2]) <= high


def test_tcp_client_port_from_the_quiet_range(tmp_path):
    out = tmp_path / "t.pcap"
    nr.record_tcp([("c2s", b"hi")], out)
    ports = {int(r[0]) for r in tshark(out, "tcp.srcport")} - {12355}
    low, high = nr.EPHEMERAL_PORTS
    assert len(ports) == 1 and low <= ports.pop() <= high


def test_tcp_script_segments_and_fin(tmp_path):
    big = bytes((i * 7) & 0xFF for i in range(10000))
    script = [("c2s", b"GET / HTTP/1.1\r\n\r\n"), ("s2c", big), ("c2s", b"more"),
              ("close", "s2c"), ("c2s", b"last words")]
    out = tmp_path / "t.pcap"
    nr.record_tcp(script, out, server_port=8080, mtu=1500)
    rows = tshark(out, "tcp.srcport", "tcp.dstport", "tcp.len", "tcp.payload", "tcp.flags.fin",
                  opts=["-o", "tcp.desegment_tcp_streams:FALSE", "-o", "tcp.analyze_sequence_numbers:FALSE"])
    client = rows[0][0]
    streams = {"c2s": b"", "s2c": b""}
    fins = []
    for sport, dport, length, payload, fin in rows:
        assert {sport, dport} == {client, "8080"}
        d = "c2s" if dport == "8080" else "s2c"
        streams[d] += bytes.fromhex(payload)
        assert int(length) <= 1448
        if fin in ("1", "True"):
            fins.append(d)
    assert streams["c2s"] == b"GET / HTTP/1.1\r\n\r\nmorelast words"
    assert streams["s2c"] == big
    assert fins == ["s2c", "c2s"]
    assert max(int(r[2]) for r in rows) == 1448  # full-size segments, no TSO


def test_tcp_bad_script_raises_and_removes_file(tmp_path):
    out = tmp_path / "bad.pcap"
    with pytest.raises(nr.RecordError):
        nr.record_tcp([("close", "c2s"), ("c2s", b"too late")], out)
    assert not out.exists()
    with pytest.raises(ValueError):
        nr.record_udp([("sideways", b"")], out)


def test_cli_udp_and_tcp(tmp_path):
    lines = [{"dir": "c2s", "hex": "deadbeef"}, {"dir": "s2c", "text": "ok"}]
    out = tmp_path / "cli.pcap"
    subprocess.run([sys.executable, TOOL, "udp", "--port", "23456", "--out", str(out)],
                   input="\n".join(map(json.dumps, lines)).encode(), check=True)
    rows = tshark(out, "udp.dstport", "udp.payload")
    assert rows == [["23456", "deadbeef"], [rows[1][0], "6f6b"]]

    lines = [{"dir": "c2s", "text": "hi"}, {"close": "c2s"}, {"dir": "s2c", "hex": "00"}]
    out = tmp_path / "cli_tcp.pcap"
    subprocess.run([sys.executable, TOOL, "tcp", "--port", "7000", "--out", str(out)],
                   input="\n".join(map(json.dumps, lines)).encode(), check=True)
    rows = tshark(out, "tcp.dstport", "tcp.payload",
                  opts=["-o", "tcp.desegment_tcp_streams:FALSE", "-Y", "tcp.len > 0"])
    assert rows == [["7000", "6869"], [rows[1][0], "00"]]
