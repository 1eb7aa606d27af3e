"""The standard layers' remaining details against tshark 4.0 (standard_run), on small made captures: time stamp
precision (nanosecond pcap, pcapng if_tsresol) and pcapng interfaces, ICMP quoting short or game datagrams,
ICMPv6 checksums, IPv6 options running past their header."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest


def _block(kind: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def pcapng(interfaces: list[dict], packets: list[tuple[int, int, bytes]]) -> bytes:
    """A little-endian pcapng file: interfaces as {resol, name, description} (None: option left out), packets as
    (interface, ticks, data)."""
    out = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for i in interfaces:
        opts = b""
        if i.get("name") is not None:
            opts += _option(2, i["name"].encode())
        if i.get("description") is not None:
            opts += _option(3, i["description"].encode())
        if i.get("resol") is not None:
            opts += _option(9, bytes([i["resol"]]))
        out += _block(1, struct.pack("<HHI", 1, 0, 0) + (opts + _option(0, b"") if opts else b""))
    for iface, ticks, data in packets:
        out += _block(6, struct.pack("<IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data)) + data)
    return out


def _units(resol: int | None) -> int:
    if resol is None:
        return 10 ** 6
    return 1 << (resol & 0x7F) if resol & 0x80 else 10 ** resol


@pytest.fixture(scope="module")
def time_captures(tmp_path_factory) -> list[Path]:
    from scapy.all import IP, UDP, Ether, wrpcap
    from scapy.utils import EDecimal
    tmp = tmp_path_factory.mktemp("prec")
    pkt = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IP(src="10.0.0.1", dst="10.0.0.2") / \
        UDP(sport=1, dport=2) / b"x"
    pkts = [pkt.copy() for _ in range(4)]
    for i, p in enumerate(pkts):      # steps of 123 ns, then one going back in time
        p.time = EDecimal("1700000000.123456789") + (i if i < 3 else -7) * EDecimal("0.000000123")
    ns = tmp / "nano.pcap"
    wrpcap(str(ns), pkts, nano=True)
    # one interface per resolution: 10^0 .. 10^10, 2^10, 2^20, 2^30, 2^34, the default (no if_tsresol); named
    # or not, with a description or not; each frame a fraction of a second apart (negative deltas included)
    resols = [None, 0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 0x80 | 10, 0x80 | 20, 0x80 | 30, 0x80 | 34]
    ifaces = [{"resol": r, "name": f"if{i}" if i % 3 else None, "description": "a port" if i % 2 else None}
              for i, r in enumerate(resols)]
    packets = [(i, 1_000_000_000 * _units(r) + _units(r) // 3 + i, bytes(pkt)) for i, r in enumerate(resols)]
    ng = tmp / "resolutions.pcapng"
    ng.write_bytes(pcapng(ifaces, packets))
    return [ns, ng]


@pytest.mark.parametrize("args", [(), ("-t", "ad"), ("-t", "d"), ("-t", "dd"), ("-t", "e"), ("-t", "udoy"),
                                  ("-t", "r", "-V"), ("-T", "json"), ("-T", "fields", "-e", "_ws.col.Time",
                                                                      "-e", "frame.time_delta", "-e", "frame.time"),
                                  ("-T", "psml"), ("-Y", "frame.number > 2", "-t", "dd")])
def test_time_precision_and_interfaces(time_captures, args, protodump_run, standard_run):
    """The time column keeps the file's (pcapng: the interface's) precision, truncated as tshark does, a
    negative time that truncates to zero unsigned; pcapng frames name their section and interface."""
    for path in time_captures:
        ours, theirs = protodump_run(*args, str(path)), standard_run(*args, "-r", str(path))
        text = theirs.stdout.replace("wireshark/4.0.17", "protodump/0.1.0") if "psml" in args else theirs.stdout
        assert ours.stdout and ours.stdout == text, f"{path.name} {' '.join(args)}"


def made(tmp_path_factory, folder: str, name: str, pkts) -> Path:
    """A pcap of scapy packets one second apart, in a fresh folder."""
    from scapy.all import wrpcap
    for i, p in enumerate(pkts):
        p.time = 1700000000 + i
    path = tmp_path_factory.mktemp(folder) / name
    wrpcap(str(path), pkts)
    return path


def same_as_tshark(path: Path, args, protodump_run, standard_run) -> None:
    ours, theirs = protodump_run(*args, str(path)), standard_run(*args, "-r", str(path))
    assert ours.returncode == 0 and "Traceback" not in ours.stderr
    assert ours.stdout == theirs.stdout, f"{path.name} {' '.join(args)}"





@pytest.fixture(scope="module")
def header_captures(tmp_path_factory) -> list[Path]:
    """ICMP errors quoting an IPv4 header cut anywhere (0 to 28 bytes: each field appears once it is whole), a bogus
    quoted header or total length, a quoted zero length (TSO), a quoted UDP header cut short; ICMPv6 errors of
    every type and code; ICMP and ICMPv6 with good and bad checksums (an echo's data: the data protocol, its -V
    hex dump longer than a label); UDP and IPv4 lengths tshark calls bogus."""
    from scapy.all import (ICMP, IP, UDP, Ether, ICMPv6DestUnreach, ICMPv6EchoRequest, ICMPv6PacketTooBig,
                           ICMPv6ParamProblem, ICMPv6TimeExceeded, IPv6, Raw, wrpcap)
    tmp = tmp_path_factory.mktemp("headers")
    e = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
    outer = e / IP(src="127.0.0.1", dst="127.0.0.1")
    plain = bytes(IP(src="127.0.0.2", dst="127.0.0.3") / UDP(sport=40000, dport=40001) / b"abc")
    icmp = [outer / ICMP(type=3, code=3) / plain[:n] for n in (0, 1, 2, 4, 7, 9, 10, 11, 12, 15, 16, 19, 20, 21, 23,
                                                               24, 25, 26, 27, 28)]
    icmp += [outer / ICMP(type=3, code=3) / (bytes([0x44]) + plain[1:]),          # header length 16
             outer / ICMP(type=11, code=0) / (plain[:2] + b"\x00\x05" + plain[4:]),     # total length 5
             outer / ICMP(type=3, code=3) / (plain[:2] + b"\x00\x00" + plain[4:]),      # total length 0
             outer / ICMP(type=3, code=3) / plain,
             e / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(type=8, id=0x1234, seq=1, chksum=0x1111) / b"abcdefgh",
             e / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(type=8, id=0x1234, seq=2) / (bytes(range(256)) * 2),
             e / IPv6(src="::1", dst="::1") / ICMPv6EchoRequest(id=5, seq=2, data=b"hi", cksum=0x1234),
             e / IPv6(src="::1", dst="::2") / ICMPv6EchoRequest(id=5, seq=2, data=b"hi3"),
             e / IPv6(src="::1", dst="::1") / ICMPv6EchoRequest(id=5, seq=2, data=b"hi", cksum=0)]
    # ICMPv6 errors: every code of each type (named, or tshark's "Unknown"), a Packet Too Big's MTU, a Parameter
    # Problem's pointer, a Time Exceeded's reserved word
    quoted6 = bytes(IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=4000, dport=4001) / b"yyyy")
    errors6 = e / IPv6(src="fd00::fe", dst="fd00::1")
    icmp += [errors6 / ICMPv6DestUnreach(code=code) / quoted6 for code in range(9)]
    icmp += [errors6 / ICMPv6ParamProblem(code=code, ptr=6) / quoted6 for code in range(5)]
    icmp += [errors6 / ICMPv6TimeExceeded(code=code) / quoted6 for code in range(3)]
    icmp += [errors6 / ICMPv6PacketTooBig(code=code, mtu=1280) / quoted6 for code in range(2)]
    e4 = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00", type=0x0800)
    lengths = [e4 / Raw(bytes(IP(src="10.0.0.1", dst="10.0.0.2", **ip) / UDP(sport=5000, dport=5001, **udp) / b"short"))
               for ip, udp in (({}, {"len": 100}), ({}, {"len": 5}), ({"len": 5}, {}), ({"len": 0}, {}),
                               ({"ihl": 15}, {}))]
    paths = []
    for name, pkts in (("icmp-quotes", icmp), ("lengths", lengths)):
        for i, p in enumerate(pkts):
            p.time = 1700000000 + i
        paths.append(tmp / f"{name}.pcap")
        wrpcap(str(paths[-1]), pkts)
    return paths


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "frame.protocols", "-e", "udp.stream", "-e", "ip.addr",
                                   "-e", "udp.port", "-e", "_ws.expert", "-e", "icmpv6.checksum.status"),
                                  ("-Y", "_ws.expert.severity == error || icmpv6.checksum.status == 0"),
                                  ("-V", "-x"), ("-T", "fields", "-e", "icmp", "-e", "icmpv6", "-e", "data", "-e", "ip")])
def test_icmp_quotes_checksums_and_lengths(header_captures, args, protodump_run, standard_run):
    for path in header_captures:
        same_as_tshark(path, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def ttl_captures(tmp_path_factory) -> list[Path]:
    """IPv4 TTLs tshark notes: to the local network control block (224.0.0.x: 1, but 255 for VRRP, GLBP and mDNS,
    any for LLMNR, 1 again for IGMP), under 5 to an address that is not multicast (broadcasts included; OSPF and
    PIM excepted), in a header an ICMP error quotes, with options; the destination MAC addresses of multicast
    groups and of a vendor's group address, as tshark names them. The second capture adds IGMP, OSPF and PIM
    (protocols protodump leaves as data): only the statistics and fields that do not show them compare."""
    from scapy.all import ICMP, IP, TCP, UDP, Ether, IPOption_RR, wrpcap
    from scapy.contrib.igmp import IGMP
    from scapy.contrib.pim import PIMv2Hdr, PIMv2Hello, PIMv2HelloHoldtime
    src = "00:1d:7e:d9:94:c0"

    def udp(dst: str, ttl: int, mac: str = "01:00:5e:00:00:fb", **ip):
        return Ether(src=src, dst=mac) / IP(src="10.0.0.1", dst=dst, ttl=ttl, **ip) / UDP(sport=40001, dport=40001) / b"x"
    probe = bytes(IP(src="10.0.0.1", dst="192.0.2.8", ttl=1) / UDP(sport=40000, dport=33434) / b"probe")
    plain = [udp("224.0.0.251", 1), udp("224.0.0.251", 255), udp("224.0.0.1", 64, "01:00:5e:00:00:01"),
             udp("224.0.0.252", 7, "01:00:5e:00:00:fc"), udp("224.0.0.18", 1, "01:00:5e:00:00:12"),
             udp("224.0.0.102", 255, "01:00:5e:00:00:66"), udp("10.0.0.2", 3, "01:1b:19:00:00:00"),
             udp("10.0.0.2", 5, "33:33:00:00:00:fb"), udp("239.255.255.250", 1, "01:00:5e:7f:ff:fa"),
             udp("255.255.255.255", 1, "ff:ff:ff:ff:ff:ff"), udp("10.0.0.255", 2, "01:00:5e:00:80:00"),
             udp("10.0.0.2", 2, "01:80:c2:00:00:0e", options=[IPOption_RR(routers=["192.0.2.1"])]),
             Ether(src=src, dst="00:00:5e:00:01:05") / IP(src="10.0.0.1", dst="10.0.0.2", ttl=4) /
             TCP(sport=40001, dport=40002, flags="S"),
             Ether(src=src, dst="00:00:5e:00:02:05") / IP(src="10.0.0.1", dst="10.0.0.2", ttl=0) / ICMP() / b"x",
             Ether(src=src, dst="01:00:5e:00:00:80") / IP(src="10.0.0.254", dst="10.0.0.1") / ICMP(type=11) / probe]
    others = [Ether(src=src, dst="01:00:5e:00:00:fb") / IP(src="10.0.0.1", dst="224.0.0.251", ttl=1, proto=2) /
              IGMP(type=0x16, gaddr="224.0.0.251"),
              Ether(src=src) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=1, proto=89) / bytes(30),
              Ether(src=src) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=1, proto=103) / PIMv2Hdr() /
              PIMv2Hello(option=[PIMv2HelloHoldtime(holdtime=105)])]
    tmp = tmp_path_factory.mktemp("ttl")
    paths = []
    for name, pkts in (("ttl", plain), ("ttl-others", plain + others)):
        for i, p in enumerate(pkts):
            p.time = 1700000000 + i
        paths.append(tmp / f"{name}.pcap")
        wrpcap(str(paths[-1]), pkts)
    return paths


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-x", "-T", "json"), ("-T", "ek"),
                                  ("-Y", "ip.ttl.too_small || ip.ttl.lncb"), ("-q", "-z", "conv,eth")])
def test_ttl_notes_and_group_address_names(ttl_captures, args, protodump_run, standard_run):
    same_as_tshark(ttl_captures[0], args, protodump_run, standard_run)


@pytest.mark.parametrize("args", [("-q", "-z", "expert"), ("-T", "fields", "-e", "ip.ttl", "-e", "eth.dst_resolved")])
def test_ttl_notes_beside_igmp_ospf_and_pim(ttl_captures, args, protodump_run, standard_run):
    same_as_tshark(ttl_captures[1], args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def v6_options_capture(tmp_path_factory) -> Path:
    """Hop-by-hop and destination options running past their header (into the next one, or past the payload),
    a header length past the payload, Router Alert, an experimental option, an empty PadN; zero UDP checksums
    (illegal over IPv6)."""
    from scapy.all import UDP, Ether, IPv6, IPv6ExtHdrHopByHop, Raw, RouterAlert, wrpcap
    e = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
    udp = bytes(UDP(sport=40000, dport=40001, chksum=0) / b"abc")
    pkts = [e / IPv6(src="::1", dst="::1", nh=kind) / Raw(bytes([17, 0]) + opts + udp)
            for kind, opts in ((0, b"\x01\x08\x00\x00\x00\x00"), (0, b"\x05\x02\x00\x00\x01\x00"),
                               (60, b"\x01\x05\x00\x00\x00\x00"), (0, b"\x1e\x09\x00\x00\x00\x00"),
                               (0, b"\x00\x01\x10\x00\x00\x00"), (60, b"\x00\x01\x10\x00\x00\x00"))]
    pkts += [e / IPv6(src="::1", dst="::1") / IPv6ExtHdrHopByHop(options=[RouterAlert()]) /
             UDP(sport=40000, dport=40001) / b"abc",
             e / IPv6(src="::1", dst="::1", nh=0) / Raw(bytes([17, 5]) + b"\x01\x02\x00\x00"),
             e / IPv6(src="::1", dst="::1", nh=60) / Raw(bytes([17, 5]) + b"\x01\x02\x00\x00")]
    return made(tmp_path_factory, "v6opts", "v6-options.pcap", pkts)


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-Y", "_ws.malformed || udp.checksum.status == 4", "-T", "fields",
                                   "-e", "frame.number", "-e", "frame.protocols", "-e", "_ws.expert")])
def test_ipv6_options_past_their_header(v6_options_capture, args, protodump_run, standard_run):
    same_as_tshark(v6_options_capture, args, protodump_run, standard_run)


@pytest.mark.parametrize("stats", [("conv,udp", "endpoints,udp"), ("endpoints,udp", "expert", "conv,udp")])
def test_several_statistics_in_tsharks_order(stats, protodump_run, standard_run):
    """tshark (4.0 and 4.4 alike) prints several -z statistics in the reverse of their command-line order."""
    args = [a for s in stats for a in ("-z", s)]
    name = "blank-bad.pcap"
    ours, theirs = protodump_run("-q", *args, name), standard_run("-q", *args, "-r", name)
    assert ours.stdout.count("=====") >= 2 * len(stats) and ours.stdout == theirs.stdout


@pytest.fixture(scope="module")
def quoting_captures(tmp_path_factory) -> list[Path]:
    """Game captures with ICMP port-unreachable errors (and an ICMPv6 one) inserted, each quoting a game datagram
    sent two frames before: tshark hands the quoted payload to the game's dissector (its state goes on from
    there), keeps ICMP's Info, and counts no expert of the quoted datagram."""
    from conftest import CAPTURES_DIR
    from scapy.all import ICMP, IP, UDP, Ether, ICMPv6DestUnreach, IPv6, Raw, rdpcap, wrpcap
    tmp = tmp_path_factory.mktemp("quoting")
    paths = []
    for name in ("blank-server-session.pcap", "blank-bad.pcap", "enet-plain.pcap", "iceball-enet-session.pcap"):
        pkts = list(rdpcap(str(CAPTURES_DIR / name)))[:30]
        out = []
        for i, p in enumerate(pkts):
            out.append(p)
            if i in (3, 7, 12, 20) and i + 1 < len(pkts):
                q = pkts[i - 2]
                e = Ether(src=q[Ether].dst, dst=q[Ether].src)
                error = e / IP(src=q[IP].dst, dst=q[IP].src) / ICMP(type=3, code=3) / Raw(bytes(q[IP])[:548])
                error.time = p.time + 0.0001
                out.append(error)
        v6 = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IPv6(src="::1", dst="::1") / \
            UDP(sport=40000, dport=pkts[0][UDP].dport) / Raw(bytes(pkts[0][UDP].payload))
        error = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IPv6(src="::1", dst="::1") / \
            ICMPv6DestUnreach(code=4) / Raw(bytes(v6[IPv6]))
        v6.time, error.time = out[-1].time + 1, out[-1].time + 1.001
        out += [v6, error]
        paths.append(tmp / f"quoted-{name}")
        wrpcap(str(paths[-1]), out)
    return paths


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-Y", "icmp && blank", "-T", "fields", "-e", "frame.number", "-e", "blank.seq")])
def test_icmp_error_quoting_a_game_datagram(quoting_captures, args, protodump_run, standard_run):
    for path in quoting_captures:
        same_as_tshark(path, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def options_capture(tmp_path_factory) -> Path:
    """pcapng packets with comments (one, two) and epb_flags (inbound, outbound with link-layer error bits)."""
    from scapy.all import IP, UDP, Ether
    pkt = bytes(Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IP(src="10.0.0.1", dst="10.0.0.2") /
                UDP(sport=1, dport=12354) / (b"\xaf\xb1\x1a\xfb" + bytes(20)))
    out = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + _option(1, b"section") + _option(0, b""))
    out += _block(1, struct.pack("<HHI", 1, 0, 0) + _option(2, b"eth0") + _option(0, b""))
    for i, opts in enumerate([_option(1, b"hello comment"), _option(2, struct.pack("<I", 1)),
                              _option(2, struct.pack("<I", 0x81000016)) + _option(1, b"one") + _option(1, b"two"),
                              b""]):
        ts = 1_700_000_000_000_000 + i * 100_000
        out += _block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(pkt), len(pkt)) + pkt +
                      b"\0" * (-len(pkt) % 4) + (opts + _option(0, b"") if opts else b""))
    path = tmp_path_factory.mktemp("pcapng-options") / "options.pcapng"
    path.write_bytes(out)
    return path


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "frame.comment", "-e", "frame.p2p_dir", "-e",
                                   "frame.packet_flags_direction", "-e", "frame.packet_flags_crc_error"),
                                  ("-Y", 'frame.comment contains "one" || frame.p2p_dir == 1')])
def test_pcapng_comments_and_flags(options_capture, args, protodump_run, standard_run):
    same_as_tshark(options_capture, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def sctp_capture(tmp_path_factory) -> Path:
    """An SCTP association on no game port: the handshake, DATA/SACK, HEARTBEAT and its ACK, SHUTDOWN, ABORT."""
    from scapy.all import (IP, SCTP, Ether, SCTPChunkAbort, SCTPChunkCookieAck, SCTPChunkCookieEcho, SCTPChunkData,
                           SCTPChunkHeartbeatAck, SCTPChunkHeartbeatReq, SCTPChunkInit, SCTPChunkInitAck,
                           SCTPChunkParamHeartbeatInfo, SCTPChunkParamStateCookie, SCTPChunkSACK, SCTPChunkShutdown,
                           SCTPChunkShutdownAck, SCTPChunkShutdownComplete, wrpcap)
    e = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
    a = e / IP(src="10.0.0.1", dst="10.0.0.2") / SCTP(sport=5000, dport=6000, tag=0x5678)
    b = e / IP(src="10.0.0.2", dst="10.0.0.1") / SCTP(sport=6000, dport=5000, tag=0x1234)
    beat = [SCTPChunkParamHeartbeatInfo(data=b"12345678")]
    pkts = [e / IP(src="10.0.0.1", dst="10.0.0.2") / SCTP(sport=5000, dport=6000, tag=0) /
            SCTPChunkInit(init_tag=0x1234, a_rwnd=65536, n_out_streams=10, n_in_streams=10, init_tsn=100),
            b / SCTPChunkInitAck(init_tag=0x5678, a_rwnd=65536, n_out_streams=10, n_in_streams=10, init_tsn=200,
                                 params=[SCTPChunkParamStateCookie(cookie=b"abcd")]),
            a / SCTPChunkCookieEcho(cookie=b"abcd"), b / SCTPChunkCookieAck(),
            a / SCTPChunkData(tsn=100, stream_id=1, data=b"hello"), b / SCTPChunkSACK(cumul_tsn_ack=100, a_rwnd=65536),
            a / SCTPChunkHeartbeatReq(params=beat), b / SCTPChunkHeartbeatAck(params=beat),
            a / SCTPChunkShutdown(cumul_tsn_ack=200), b / SCTPChunkShutdownAck(), a / SCTPChunkShutdownComplete(),
            a / SCTPChunkAbort()]
    return made(tmp_path_factory, "sctp", "sctp.pcap", pkts)


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json")])
def test_sctp_chunks(sctp_capture, args, protodump_run, standard_run):
    same_as_tshark(sctp_capture, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def lan_capture(tmp_path_factory) -> Path:
    """What a real Ethernet adds: ARP (request, reply, gratuitous, probe, announcement, reverse), frames with
    bytes after the packet (zero padding to 60 bytes, an FCS, a trailer, non-zero padding), IPv6 neighbour
    discovery and an MLDv2 report (behind a hop-by-hop Router Alert)."""
    from scapy.all import (ARP, IP, UDP, Ether, ICMPv6MLDMultAddrRec, ICMPv6MLReport2, ICMPv6ND_NA, ICMPv6ND_NS,
                           ICMPv6ND_RS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6, IPv6ExtHdrHopByHop, PadN,
                           Padding, RouterAlert, wrpcap)
    b = Ether(src="02:42:ac:11:00:02", dst="ff:ff:ff:ff:ff:ff")
    u = Ether(src="02:42:ac:11:00:02", dst="02:42:ac:11:00:03")
    ip = IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / b"x"
    pkts = [b / ARP(op=1, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.2"),
            u / ARP(op=2, hwsrc="02:42:ac:11:00:03", psrc="10.0.0.2", hwdst="02:42:ac:11:00:02", pdst="10.0.0.1"),
            b / ARP(op=1, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.1"),
            b / ARP(op=1, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.1", hwdst="ff:ff:ff:ff:ff:ff"),
            b / ARP(op=2, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.1", hwdst="ff:ff:ff:ff:ff:ff"),
            b / ARP(op=1, hwsrc="02:42:ac:11:00:02", psrc="0.0.0.0", pdst="10.0.0.5"),
            b / ARP(op=3, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.2"),
            b / ARP(op=1, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.2") / Padding(b"\0" * 18),
            b / ARP(op=1, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.2") / Padding(b"\0" * 22),
            b / ARP(op=1, hwsrc="02:42:ac:11:00:02", psrc="10.0.0.1", pdst="10.0.0.2") / Padding(b"\x05" * 18),
            u / ip / Padding(b"\0" * 17), u / ip / Padding(b"\0" * 21), u / ip / Padding(b"\x01" * 17),
            u / ip / Padding(b"\0" * 10),
            u / IPv6(src="::1", dst="::2") / UDP(sport=1, dport=2) / b"x" / Padding(b"\0" * 4)]
    mac = "02:42:ac:11:00:02"
    pkts += [Ether(src=mac, dst="33:33:ff:00:00:02") / IPv6(src="fe80::1", dst="ff02::1:ff00:2") /
             ICMPv6ND_NS(tgt="fe80::2") / ICMPv6NDOptSrcLLAddr(lladdr=mac),
             Ether(src="02:42:ac:11:00:03", dst=mac) / IPv6(src="fe80::2", dst="fe80::1") /
             ICMPv6ND_NA(tgt="fe80::2", R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr="02:42:ac:11:00:03"),
             Ether(src=mac, dst="33:33:00:00:00:16") / IPv6(src="::", dst="ff02::16", hlim=1) /
             IPv6ExtHdrHopByHop(options=[RouterAlert(value=0), PadN(optdata=b"")]) /
             ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=4, dst="ff02::1:ff00:2")]),
             Ether(src=mac, dst="33:33:00:00:00:02") / IPv6(src="fe80::1", dst="ff02::2", hlim=255) / ICMPv6ND_RS() /
             ICMPv6NDOptSrcLLAddr(lladdr=mac)]
    return made(tmp_path_factory, "lan", "lan.pcap", pkts)


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-Y", "arp.isgratuitous || eth.padding || eth.trailer || eth.fcs", "-T", "fields",
                                   "-e", "frame.number", "-e", "_ws.col.Protocol", "-e", "_ws.col.Info")])
def test_arp_and_ethernet_trailers(lan_capture, args, protodump_run, standard_run):
    same_as_tshark(lan_capture, args, protodump_run, standard_run)



def test_written_pcapng_keeps_precision_and_interfaces(time_captures, tmp_path, protodump_run, standard_run):
    """-w pcapng keeps a nanosecond pcap's nanoseconds (and a microsecond capture's microseconds), as tshark -w:
    the copy reads as the original (its time column, its frame times)."""
    from scapy.all import rdpcap, wrpcap
    micro = tmp_path / "micro.pcap"
    wrpcap(str(micro), rdpcap(str(time_captures[0])))
    for path in (time_captures[0], micro):
        ours = tmp_path / f"copy-{path.stem}.pcapng"
        assert protodump_run("-r", str(path), "-w", str(ours)).returncode == 0
        for args in (("-t", "e"), ("-t", "dd"), ("-T", "fields", "-e", "frame.time_epoch")):
            assert protodump_run(*args, str(ours)).stdout == standard_run(*args, "-r", str(path)).stdout


@pytest.mark.parametrize("time_format", ["ad", "adoy", "d", "dd", "e", "u", "ud"])
@pytest.mark.parametrize("form", [("-T", "fields", "-e", "_ws.col.Time", "-e", "frame.number"), ("-T", "psml"),
                                  ("-T", "ek", "-e", "_ws.col.Time"), ("-T", "json", "-e", "_ws.col.Time")])
def test_time_column_field_follows_t(time_format, form, protodump_run, standard_run):
    """_ws.col.Time (and PSML's Time section) as -t says, also under a display filter."""
    args = ("-t", time_format, *form, "-Y", "frame.number > 3", "-c", "20")
    ours, theirs = protodump_run(*args, "blank-2015.pcap"), standard_run(*args, "-r", "blank-2015.pcap")
    text = theirs.stdout.replace("wireshark/4.0.17", "protodump/0.1.0") if "psml" in form else theirs.stdout
    assert ours.stdout and ours.stdout == text


@pytest.fixture(scope="module")
def ra_capture(tmp_path_factory) -> Path:
    """IPv6 router advertisements: flags (other configuration; managed, home agent, high preference), a source
    link-layer address, an MTU and a prefix information option (one with infinite lifetimes)."""
    from scapy.all import (Ether, ICMPv6ND_RA, ICMPv6NDOptMTU, ICMPv6NDOptPrefixInfo, ICMPv6NDOptSrcLLAddr,
                           IPv6)
    head = Ether(src="52:54:00:12:34:56", dst="33:33:00:00:00:01") / IPv6(src="fe80::5054:ff:fe12:3456",
                                                                           dst="ff02::1", hlim=255)
    src = ICMPv6NDOptSrcLLAddr(lladdr="52:54:00:12:34:56")
    return made(tmp_path_factory, "ra", "ra.pcap", [
        head / ICMPv6ND_RA(chlim=64, O=1, routerlifetime=1800) / src / ICMPv6NDOptMTU(mtu=1500) /
        ICMPv6NDOptPrefixInfo(prefixlen=64, L=1, A=1, validlifetime=86400, preferredlifetime=14400,
                              prefix="2001:db8:1::"),
        head / ICMPv6ND_RA(chlim=0, M=1, H=1, prf=1, routerlifetime=0) / src,
        head / ICMPv6ND_RA(prf=3, P=1) / ICMPv6NDOptPrefixInfo(prefixlen=48, R=1, validlifetime=0xFFFFFFFF,
                                                              preferredlifetime=0xFFFFFFFF, prefix="2001:db8::")])


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-Y", "icmpv6.nd.ra.flag.o == 1")])
def test_router_advertisements(ra_capture, args, protodump_run, standard_run):
    same_as_tshark(ra_capture, args, protodump_run, standard_run)


def test_written_pcapng_keeps_comments_and_flags(options_capture, tmp_path, protodump_run, standard_run):
    """-w pcapng writes each packet's comments (opt_comment) and flags (epb_flags): tshark reads the copy as it
    reads a copy tshark -w made."""
    ours, theirs = tmp_path / "ours.pcapng", tmp_path / "theirs.pcapng"
    assert protodump_run("-r", str(options_capture), "-w", str(ours)).returncode == 0
    standard_run("-r", str(options_capture), "-w", str(theirs))
    for args in (("-V",), ("-T", "json"), ("-q", "-z", "expert")):
        text = standard_run(*args, "-r", str(ours)).stdout
        assert "hello comment" in text and text == standard_run(*args, "-r", str(theirs)).stdout


@pytest.fixture(scope="module")
def ip_options_capture(tmp_path_factory) -> Path:
    """IPv4 options: router alert; NOP and a record route (next slot, full, pointer before / inside an
    address); time stamps (only, with addresses, one cut short); NOPs and EOL; four NOPs; an unknown option;
    lengths too short, past the options, a missing length byte."""
    from scapy.all import IP, UDP, Ether
    head = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")

    def ip(raw: bytes):
        raw += b"\x00" * (-len(raw) % 4)
        return (head / IP(src="10.0.0.1", dst="10.0.0.2", ihl=5 + len(raw) // 4, options=raw) /
                UDP(sport=1, dport=2) / b"x")
    options = [b"\x94\x04\x00\x00", b"\x01\x07\x0b\x08\x01\x02\x03\x04\x00\x00\x00\x00",
               b"\x07\x0b\x0c\x01\x02\x03\x04\x05\x06\x07\x08", b"\x07\x07\x02\x01\x02\x03\x04",
               b"\x07\x07\x06\x01\x02\x03\x04", b"\x44\x08\x09\x00\x00\x00\x30\x39",
               b"\x44\x0c\x0d\x01\x0a\x00\x00\x01\x00\x00\x00\x07", b"\x44\x0a\x05\x01\x0a\x00\x00\x01\x00\x00",
               b"\x01\x01\x01\x00", b"\x01\x01\x01\x01\x94\x04\x00\x00", b"\x9e\x06\x01\x02\x03\x04",
               b"\x94\x01\x00\x00", b"\x94\x09\x00\x00", b"\x01\x01\x01\x94"]
    return made(tmp_path_factory, "ip-options", "ip-options.pcap", [ip(o) for o in options])


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "ip.opt.type", "-e", "ip.rec_rt", "-e", "ip.opt.time_stamp")])
def test_ipv4_options(ip_options_capture, args, protodump_run, standard_run):
    same_as_tshark(ip_options_capture, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def routing_capture(tmp_path_factory) -> Path:
    """IPv6 routing headers: a source route (type 0, deprecated) with segments left and without, a Mobile IPv6
    home address (type 2), a segment routing header (type 4): the Destination column and udp.stream follow the
    route's end while segments are left."""
    from scapy.all import UDP, Ether, IPv6, IPv6ExtHdrRouting, IPv6ExtHdrSegmentRouting
    head = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") / IPv6(src="2001:db8::1", dst="2001:db8::2")
    tail = UDP(sport=1, dport=2) / b"x"
    return made(tmp_path_factory, "routing", "routing.pcap", [
        head / IPv6ExtHdrRouting(addresses=["2001:db8::3", "2001:db8::4"], segleft=1) / tail,
        head / IPv6ExtHdrRouting(addresses=["2001:db8::3"], segleft=0) / tail,
        head / IPv6ExtHdrRouting(type=2, addresses=["2001:db8::5"], segleft=1) / tail,
        head / IPv6ExtHdrSegmentRouting(addresses=["2001:db8::6", "2001:db8::7"], segleft=1) / tail])


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "udp.stream", "-e", "ipv6.routing.type")])
def test_ipv6_routing_header(routing_capture, args, protodump_run, standard_run):
    same_as_tshark(routing_capture, args, protodump_run, standard_run)
