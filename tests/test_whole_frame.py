"""Whole frames, standard layers included, as tshark + the generated plugin shows them: the JSON forms (-T json,
-x, jsonraw, -j/-J, every layer and wslua's `_ws.lua.fake` items), the summary line and -V, frame by frame, on every
bundled capture.

Frames left out are listed in KNOWN with the reason (none now); the test prints each capture's share of identical
frames.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import CAPTURES, VARIANTS, variant_id
from whole_frame import compare

# capture -> {frame: why it is left out}, for -T json, -V and the summary line alike. Empty since protodump's
# websocket layer shows what tshark 4.0's shows (dissectors/websocket.py: a message ending with an empty frame goes
# to the game at the end of the frame, as the plugin's postdissector shows it; a compressed fragmented one is handed
# up as it is; protodump's own frame checks only with -o websocket.checks:TRUE). A frame listed here must differ:
# each test fails on a new difference and on a listed frame that became identical.
KNOWN: dict[str, dict[int, str]] = {}


def _known(name: str) -> dict[int, str]:
    return KNOWN.get(name, {})


def _check_listed(name: str, differ, form: str) -> None:
    """The frames that differ are exactly the listed ones."""
    known = _known(name)
    unexplained = [(n, where) for n, where in differ if n not in known]
    assert not unexplained, f"{name} {form}: {len(unexplained)} frame(s) differ: {unexplained[:5]}"
    now_same = sorted(set(known) - {n for n, _ in differ})
    assert not now_same, f"{name} {form}: listed frames {now_same} are now identical: take them out of KNOWN"


@pytest.fixture(scope="module", params=VARIANTS, ids=variant_id)
def runs(request, protodump_run, standard_run):
    name, extra = request.param
    return name, extra, protodump_run, standard_run


# tshark's JSON forms: plain, with the `_raw` arrays, only them (on every capture); protocol filters (-j: the
# filtered layers' values stay; -J: a listed layer's whole subtree) on one capture of each family
JSON_FORMS = [("-T", "json"), ("-T", "json", "-x"), ("-T", "jsonraw")]
FILTER_FORMS = [("-T", "json", "-j", "frame udp blank enet iceball rutentoy freeblox"),
                ("-T", "json", "-J", "tcp websocket")]
FILTER_CAPTURES = ["blank-bad.pcap", "enet-bad.pcap", "iceball-enet-all.pcap", "iceball-tcp-all.pcap",
                   "rutentoy-sctp.pcap", "rutentoy-mptcp.pcap", "freeblox-bad.pcap", "websocket-bad.pcap"]


@pytest.mark.parametrize("form", JSON_FORMS, ids=lambda f: " ".join(f[1:]))
def test_whole_frame_json(runs, form):
    _same_json(*runs, form)


@pytest.mark.parametrize("form", FILTER_FORMS, ids=lambda f: f[2])
@pytest.mark.parametrize("name", FILTER_CAPTURES)
def test_whole_frame_json_filters(name, form, protodump_run, standard_run):
    _same_json(name, (), protodump_run, standard_run, form)


def _same_json(name, extra, ours, theirs, form):
    """Frame by frame, the same output as tshark + plugin, but for the frames KNOWN to differ."""
    a, b = ours(*form, *extra, name), theirs(*form, *extra, "-r", name)
    same, compared, left_out, differ = compare(a.stdout, b.stdout)
    assert not [n for n, _ in left_out if n == 0], left_out
    print(f"{name}: {same}/{compared} frames identical ({100 * same / max(compared, 1):.1f} %)")
    _check_listed(name, differ + left_out, "-T json")


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
    _check_listed(name, [(i + 1, "-V") for i, (x, y) in enumerate(zip(a, b)) if x != y], "-V")


def test_summary_lines(runs):
    name, extra, ours, theirs = runs
    a, b = ours(*extra, name).stdout.splitlines(), theirs(*extra, "-r", name).stdout.splitlines()
    assert len(a) == len(b)
    _check_listed(name, [(i + 1, (x, y)) for i, (x, y) in enumerate(zip(a, b)) if x != y], "summary")


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
def test_time_column_and_fields(args, protodump_run, standard_run):
    """The time column counts from the capture's first frame whatever -Y shows; -t formats; frame.time*."""
    name = "blank-server-session.pcap"
    ours, theirs = protodump_run(*args, name), standard_run(*args, "-r", name)
    assert ours.stdout and ours.stdout == theirs.stdout


@pytest.mark.parametrize("name", CAPTURES)
def test_expert_statistic(name, protodump_run, standard_run):
    """-z expert: the standard layers' experts (TCP analysis, connection chats) counted with the game ones, and the
    ones a dissector puts on the top level of the tree (WebSocket's "Decompression failed" in websocket-bad)."""
    ours, theirs = protodump_run("-q", "-z", "expert", name), standard_run("-q", "-z", "expert", "-r", name)
    assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("expr", ["tcp.analysis.flags", "_ws.expert", "_ws.malformed", "_ws.expert.severity == warning",
                                  '_ws.expert.group == "Malformed"', "tcp.analysis.lost_segment",
                                  "tcp.connection.syn", "tcp.port == 29778 && tcp.flags.syn == 1", "udp.port == 12354",
                                  'ip.host == "127.0.0.1" && frame.time_delta > 0.0001', "tcp.stream == 0",
                                  'eth.addr.oui_resolved contains "Xerox"', "udp.stream == 0 && udp.time_delta > 0.001"])
@pytest.mark.parametrize("name", ["rutentoy-lost-reordered.pcap", "blank-bad.pcap", "iceball-tcp-bad.pcap"])
def test_standard_fields_filter(expr, name, protodump_run, standard_run):
    args = ("-Y", expr, "-T", "fields", "-e", "frame.number")
    assert protodump_run(*args, name).stdout == standard_run(*args, "-r", name).stdout


def _made_captures(tmp: Path) -> list[Path]:
    """Small captures of the standard layers the bundled ones lack: ICMP/ICMPv6 (echo, errors quoting a UDP
    datagram, one cut short), Linux cooked v1/v2, BSD loopback, IPv6 extension headers and a fragment, and
    Ethernet addresses tshark names (broadcast, multicast ranges, a vendor, a /36 block, a group source), and TCP
    headers tshark flags (bad data offset and option lengths)."""
    from scapy.all import (CookedLinux, CookedLinuxV2, Dot1AD, Dot1Q, Ether, ICMP, ICMPv6DestUnreach, ICMPv6EchoReply,
                           ICMPv6EchoRequest, IP, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                           Loopback, Raw, UDP, wrpcap)
    pl = b"\xaf\xb1\x1a\xfb" + b"\x00" * 20
    e = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
    # the quoted datagram goes to no game port (tests/test_std_details.py quotes game datagrams)
    inner = IP(src="127.0.0.1", dst="127.0.0.1", id=7) / UDP(sport=40000, dport=40001) / Raw(bytes(24))
    sets = {
        "icmp": [e / IP(src="127.0.0.1", dst="127.0.0.1") / ICMP(type=3, code=3) / bytes(inner),
                 e / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(type=8, id=0x1234, seq=1) / Raw(b"abcdefgh" * 4),
                 e / IP(src="10.0.0.2", dst="10.0.0.1") / ICMP(type=0, id=0x1234, seq=1) / Raw(b"abcdefgh" * 4),
                 e / IP(src="127.0.0.1", dst="127.0.0.1") / ICMP(type=3, code=3) / bytes(inner)[:28],
                 e / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(type=11, code=0) / bytes(inner),
                 e / IPv6(src="::1", dst="::1") / ICMPv6EchoRequest(id=5, seq=2, data=b"hi"),
                 e / IPv6(src="::1", dst="::1") / ICMPv6EchoReply(id=5, seq=2, data=b"hi"),
                 e / IPv6(src="::1", dst="::1") / ICMPv6DestUnreach(code=4) / IPv6(src="::1", dst="::1") /
                 UDP(sport=1, dport=2) / b"xx"],
        "sll": [CookedLinux(pkttype=0, lladdrtype=772, lladdrlen=6, src=b"\0" * 8, proto=0x0800) /
                IP(src="127.0.0.1", dst="127.0.0.1") / UDP(sport=40000, dport=12354) / pl],
        "sll2": [CookedLinuxV2(proto=0x0800, ifindex=1, lladdrtype=772, pkttype=0, lladdrlen=6, src=b"\0" * 8) /
                 IP(src="127.0.0.1", dst="127.0.0.1") / UDP(sport=40000, dport=12354) / pl],
        "null": [Loopback(type=2) / IP(src="127.0.0.1", dst="127.0.0.1") / UDP(sport=40000, dport=12354) / pl,
                 Loopback(type=30) / IPv6(src="::1", dst="::1") / UDP(sport=40000, dport=12354) / pl],
        "v6ext": [e / IPv6(src="::1", dst="::1") / IPv6ExtHdrHopByHop() / UDP(sport=40000, dport=12354) / pl,
                  e / IPv6(src="::1", dst="::1") / IPv6ExtHdrDestOpt() / UDP(sport=40000, dport=12354) / pl,
                  e / IPv6(src="::1", dst="::1") / IPv6ExtHdrFragment(id=5, m=1) / UDP(sport=40000, dport=12354) /
                  pl],
        "vlan": [e / Dot1Q(prio=5, dei=1, vlan=42) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / b"x",
                 e / Dot1AD(prio=3, vlan=7) / Dot1Q(vlan=9) / IP(src="10.0.0.1", dst="10.0.0.2") /
                 UDP(sport=1, dport=2) / b"y"],
        "macs": [Ether(src=s, dst=d) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=12345, dport=12345)
                 for s, d in (("00:1d:7e:d9:94:c0", "ff:ff:ff:ff:ff:ff"), ("02:42:ac:11:00:02", "01:00:5e:00:00:01"),
                              ("01:00:5e:00:00:01", "33:33:00:00:00:01"), ("00:1b:c5:00:00:12", "01:80:c2:00:00:00"))],
    }
    sets["tcpopts"] = [Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00", type=0x0800) / Raw(f)
                       for f in _bad_tcp_options()]
    paths = []
    for name, pkts in sets.items():
        for i, p in enumerate(pkts):
            p.time = 1700000000 + i * 0.25
        path = tmp / f"{name}.pcap"
        wrpcap(str(path), pkts)
        paths.append(path)
    return paths


def _bad_tcp_options() -> list[bytes]:
    """SYN segments (one connection each) whose header tshark 4.0 flags: a bogus data offset; option lengths
    missing, too short, past the options or not the option's own; 4 NOPs in a row; non-zero padding after an
    End of Option List; a window scale shift over 14; no MSS option; an unknown option."""
    from scapy.all import IP, TCP

    def syn(port, options):
        return bytes(IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=5000, dport=port, flags="S", options=options))

    mss_nops = [("MSS", 1460), ("NOP", None), ("NOP", None)]
    return [
        syn(5001, mss_nops)[:32] + bytes([0x30]) + syn(5001, mss_nops)[33:],         # data offset 3 words
        syn(5003, mss_nops)[:41] + bytes([9]) + syn(5003, mss_nops)[42:],            # MSS length past the options
        syn(5004, mss_nops)[:41] + bytes([0]) + syn(5004, mss_nops)[42:],            # length 0
        syn(5005, mss_nops)[:41] + bytes([3]) + syn(5005, mss_nops)[42:],            # MSS length 3, then a stray byte
        syn(5006, [(3, b"\x07\x00"), ("NOP", None), ("NOP", None), ("NOP", None)]),   # window scale length 4
        syn(5007, [(8, bytes(6)), ("NOP", None), ("NOP", None)]),                     # timestamps length 8
        syn(5008, [(4, b"\x00"), ("NOP", None)]),                                     # SACK permitted length 3
        syn(5010, [("NOP", None), (1, b""), (2, b"")]),                               # MSS length 2
        syn(5011, [("EOL", None), ("NOP", None), ("NOP", None), ("NOP", None)]),      # non-zero padding
        syn(5013, [("NOP", None)] * 3)[:-1] + bytes([99]),                            # no length byte
        syn(5014, [("WScale", 15), ("NOP", None)]),                                   # shift 15
        syn(5015, [("NOP", None)] * 4 + [("MSS", 1460)]),                             # 4 NOPs
        syn(5016, [(99, b"\x01\x02"), ("MSS", 1460)]),                                # an unknown option
    ]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return _made_captures(tmp_path_factory.mktemp("std"))


@pytest.mark.parametrize("form", [("-T", "json"), ("-V",), (), ("-n", "-V"), ("-q", "-z", "expert")])
def test_made_captures_whole_frames(made, form, protodump_run, standard_run):
    for path in made:
        ours, theirs = protodump_run(*form, str(path)), standard_run(*form, "-r", str(path))
        assert ours.stdout == theirs.stdout, f"{path.name} {' '.join(form)}"


def test_malformed_standard_headers(tmp_path, protodump_run, standard_run):
    """Bad IHL and IP length, TCP data offset, TCP option lengths, an ICMP error quoting a cut datagram, an IP
    length past the frame, a bad UDP length: never an exception, the next frame decodes, the summary is tshark's."""
    from scapy.all import ICMP, IP, TCP, UDP, Ether, Raw, wrpcap
    e = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00", type=0x0800)
    good = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5000, dport=5001) / b"hello")
    syn = [bytes(IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=5000, dport=port, flags="S",
                                                          options=[("MSS", 1460), ("NOP", None), ("NOP", None)]))
           for port in (5001, 5002, 5003)]           # one connection each (tshark would see retransmissions)
    frames = [bytes([0x43]) + good[1:], bytes([0x4F]) + good[1:], syn[0][:32] + bytes([0x30]) + syn[0][33:],
              syn[1][:41] + bytes([9]) + syn[1][42:], syn[2][:41] + bytes([0]) + syn[2][42:],
              bytes(IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(type=3, code=3) /
                    bytes(IP(src="10.0.0.2", dst="10.0.0.1") / UDP(sport=1, dport=2))[:10]),
              bytes(IP(src="10.0.0.1", dst="10.0.0.2", len=200) / UDP(sport=5000, dport=5001) / b"short"),
              bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5000, dport=5001, len=100) / b"short"), good]
    pkts = [e / Raw(f) for f in frames]
    for i, p in enumerate(pkts):
        p.time = 1700000000 + i
    path = tmp_path / "bad-headers.pcap"
    wrpcap(str(path), pkts)
    ours, theirs = protodump_run(str(path)), standard_run("-r", str(path))
    assert ours.returncode == 0 and "Traceback" not in ours.stderr
    assert ours.stdout == theirs.stdout


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """Many interleaved conversations of every family, each a cut of a real session (tools/replay.py): TCP
    connections that start or go on after segments not captured, ACKs in the same microsecond as their segment."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    import replay
    path = tmp_path_factory.mktemp("replay") / "mix.pcap"
    replay.write(path, "mix", 2500, conversations=20, live=50)
    return path


@pytest.mark.parametrize("form", [("-T", "json"), ("-V",)], ids=["json", "V"])
def test_replayed_conversations_whole_frames(replayed, form, protodump_run, standard_run):
    """After a gap tshark's websocket frames the next segment from its start with no note of its own (only the
    plugin's stream protocols resynchronise); an ACK whose RTT is 0 shows the ACKed frame and no RTT."""
    ours, theirs = protodump_run(*form, str(replayed)), standard_run(*form, "-r", str(replayed))
    if form == ("-V",):
        a, b = _frames(ours.stdout), _frames(theirs.stdout)
        assert len(a) == len(b) == 2500
        assert [i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y] == []
        assert "[TCP Previous segment not captured] WebSocket" in standard_run("-r", str(replayed)).stdout
        return
    same, compared, left_out, differ = compare(ours.stdout, theirs.stdout)
    assert (same, compared, left_out, differ) == (2500, 2500, [], [])
