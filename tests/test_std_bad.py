"""Malformed standard headers (issue 10's bad input) against tshark 4.0 (standard_run): each frame gets tshark's
experts on its layer, the same -V, -T json, summary and -z expert, and the next frame decodes normally (a good
datagram closes the capture). Bad IPv4 header and total lengths (a UDP header past the IP length, read as far as
it goes), TCP data offsets and option lengths, UDP lengths, ICMP errors quoting a cut or bogus datagram or nothing,
an SCTP chunk of length 0, IPv6 extension-header chains (a destination-options chain, a hop-by-hop header running
past the payload, two fragment headers, routing headers, no next header)."""
from __future__ import annotations

from pathlib import Path

import pytest

from test_std_details import same_as_tshark

TMP = Path(__file__).resolve().parent / "tmp"


def _frames() -> list:
    from scapy.all import ICMP, IP, TCP, UDP, Ether, IPv6, Raw
    from scapy.layers.sctp import SCTP
    e = Ether(src="00:1d:7e:d9:94:c0", dst="52:54:00:12:34:56", type=0x0800)
    e6 = Ether(src="00:1d:7e:d9:94:c0", dst="52:54:00:12:34:56", type=0x86DD)
    v4 = dict(src="10.0.0.1", dst="10.0.0.2")
    good = bytes(IP(**v4) / UDP(sport=5000, dport=5001) / b"hello")

    def syn(port, edit_at, value):
        raw = bytes(IP(**v4) / TCP(sport=6000, dport=port, flags="S", options=[("MSS", 1460), ("NOP", None),
                                                                                ("NOP", None)]))
        return raw[:edit_at] + bytes([value]) + raw[edit_at + 1:]

    def v6(nh, body):
        return e6 / Raw(bytes(IPv6(src="fe80::1", dst="fe80::2", nh=nh, plen=len(body))) + body)

    def hbh(nxt, ln=0):
        return bytes([nxt, ln]) + b"\x01\x04\x00\x00\x00\x00"

    udp1 = bytes(UDP(sport=1, dport=2) / b"x")
    quoted_udp = bytes(IP(src="10.0.0.2", dst="10.0.0.1") / UDP(sport=1, dport=2))
    frames = [bytes([0x43]) + good[1:], bytes([0x4F]) + good[1:], good[:2] + b"\x00\x10" + good[4:]]
    frames += [good[:2] + (20 + n).to_bytes(2, "big") + good[4:] for n in (0, 1, 3, 4, 6, 7)]
    frames += [syn(7001, 32, 0x30), syn(7002, 32, 0xF0), syn(7003, 41, 0), syn(7004, 41, 1), syn(7005, 41, 40)]
    frames += [bytes(IP(**v4) / UDP(sport=5000, dport=5001, len=4) / b"short"),
               bytes(IP(**v4) / UDP(sport=5000, dport=5001, len=200) / b"short"),
               bytes(IP(**v4) / ICMP(type=3, code=3) / quoted_udp[:10]),
               bytes(IP(**v4) / ICMP(type=11, code=0) / bytes(IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=1,
                                                                                                       dport=2))[:24]),
               bytes(IP(**v4) / ICMP(type=3, code=3) / (bytes([0x4F]) + quoted_udp[1:])),
               bytes(IP(**v4) / ICMP(type=3, code=3)),
               bytes(IP(**v4) / SCTP(sport=1, dport=2) / Raw(b"\x00\x03\x00\x00" + bytes(12)))]
    pkts = [e / Raw(f) for f in frames]
    pkts += [v6(60, hbh(60) + hbh(60) + hbh(60) + hbh(17) + udp1), v6(0, hbh(0, 5)),
             v6(44, bytes([44, 0, 0, 1, 0, 0, 0, 9]) + bytes([17, 0, 0, 0, 0, 0, 0, 9]) + udp1),
             v6(43, bytes([17, 0, 0, 0, 0, 0, 0, 0]) + udp1), v6(43, bytes([17, 2, 4, 1, 0, 0, 0, 0]) + bytes(16) + udp1),
             v6(59, b""), v6(0, hbh(59)), e / Raw(good)]
    return pkts


@pytest.fixture(scope="module")
def bad_capture() -> Path:
    from scapy.all import wrpcap
    pkts = _frames()
    for i, p in enumerate(pkts):
        p.time = 1_700_000_000 + i
    TMP.mkdir(exist_ok=True)
    path = TMP / "bad-standard-headers.pcap"
    wrpcap(str(path), pkts)
    return path


@pytest.mark.parametrize("args", [("-T", "json"), ("-V",), (), ("-q", "-z", "expert"), ("-Y", "_ws.malformed"),
                                  ("-Y", "udp.length.bad || ip.bogus_header_length || tcp.bogus_header_length")],
                         ids=["json", "V", "summary", "expert", "malformed", "experts"])
def test_malformed_headers_as_tshark(bad_capture, args, protodump_run, standard_run):
    same_as_tshark(bad_capture, args, protodump_run, standard_run)


def test_next_frame_decodes(bad_capture, protodump_run):
    last = protodump_run(str(bad_capture)).stdout.splitlines()[-1]
    assert last.endswith("UDP 47 5000 → 5001 Len=5")
