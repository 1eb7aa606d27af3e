"""IPv4 and IPv6 datagrams reassembled from fragments (reassembly/ip_fragments.py), as tshark's ip.defragment and
ipv6.defragment: game datagrams, TCP segments and SCTP packets of the bundled sessions cut into fragments with
scapy, sent in order, last fragment first, interleaved with another datagram's, or with a fragment lost; whole
frames against tshark 4.0 + plugin in every form (one pass and -2); the table's rules and bounds property-based."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import CAPTURES_DIR, PROTODUMP
from test_std_details import same_as_tshark
from protodump.reassembly.budget import PENDING
from protodump.reassembly.ip_fragments import DATAGRAM_LIMIT, IpFragments

CLIENT, SERVER = "00:1d:7e:d9:94:c0", "52:54:00:12:34:56"


def _fragmented(session: str, count: int, v6: bool = False) -> list:
    """The session's first `count` datagrams; those over 200 bytes as fragments of 128 (IPv6: 200) bytes, by the
    datagram's index: in order, last first, one lost (never complete), or interleaved with the next one's."""
    from scapy.all import IP, UDP, Ether, IPv6, IPv6ExtHdrFragment, fragment, fragment6, rdpcap
    out, held = [], []
    for i, p in enumerate(rdpcap(str(CAPTURES_DIR / session))[:count]):
        ip = IP(bytes(p[IP]))
        ip.id = 3 * i + 1                              # small: the Info column writes four hex digits
        if v6:
            l4 = ip.payload.copy()
            del l4[UDP].chksum, l4[UDP].len
            ip = IPv6(src="fd00::a", dst="fd00::b") / IPv6ExtHdrFragment(id=i + 5) / l4
        if len(ip) <= 200:
            out.append(Ether(src=CLIENT, dst=SERVER) / (ip if not v6 else
                                                        IPv6(src="fd00::a", dst="fd00::b") / ip[UDP]))
            continue
        pieces = [Ether(src=CLIENT, dst=SERVER) / f for f in (fragment6(ip, 200) if v6 else fragment(ip, 128))]
        kind = i % 5
        if kind == 1:
            pieces.reverse()
        elif kind == 2 and len(pieces) > 2:
            del pieces[1]
        elif kind == 3:
            held = pieces
            continue
        if held:
            n = min(len(held), len(pieces))
            pieces = [q for pair in zip(held, pieces) for q in pair] + held[n:] + pieces[n:]
            held = []
        out.extend(pieces)
    out.extend(held)
    return out


@pytest.fixture(scope="module")
def fragmented(tmp_path_factory) -> list[Path]:
    return _captures(tmp_path_factory, "fragments", _fragmented, (("blank", "blank-server-session.pcap", 80, False),
                                                                  ("enet", "iceball-enet-session.pcap", 80, False),
                                                                  ("enet-rc", "enet-rangecoder.pcap", 80, False),
                                                                  ("blank-v6", "blank-server-session.pcap", 40, True)))


def _captures(tmp_path_factory, kind: str, make, sets) -> list[Path]:
    """A capture of make(session, count, v6)'s packets, a millisecond apart, for each (name, session, count, v6) of
    `sets`."""
    from scapy.all import wrpcap
    tmp = tmp_path_factory.mktemp(kind)
    paths = []
    for name, session, count, v6 in sets:
        packets = make(session, count, v6)
        for k, q in enumerate(packets):
            q.time = 1795285865 + 0.001 * k
        paths.append(tmp / f"{kind}-{name}.pcap")
        wrpcap(str(paths[-1]), packets)
    return paths


def test_the_captures_hold_reassembled_lost_and_reordered_datagrams(fragmented):
    for path in fragmented:
        out = subprocess.run([*PROTODUMP, "-V", str(path)], capture_output=True, text=True, check=True).stdout
        name = "IPv6" if "v6" in path.name else "IPv4"
        assert out.count(f" {name} Fragments (") >= 3, path.name
        lines = subprocess.run([*PROTODUMP, str(path)], capture_output=True, text=True, check=True).stdout
        assert ("IPv6 fragment (off=" if name == "IPv6" else "Fragmented IP protocol (") in lines, path.name
    summary = subprocess.run([*PROTODUMP, "-2", str(fragmented[0])], capture_output=True, text=True).stdout
    assert " [Reassembled in #" in summary


FORMS = [(), ("-T", "json"), ("-V",), ("-x",), ("-x", "-T", "json"), ("-T", "ek"), ("-2",), ("-2", "-V"),
         ("-2", "-T", "json"), ("-q", "-z", "expert"), ("-T", "fields", "-e", "ip.fragment", "-e", "ipv6.fragment",
                                                         "-e", "udp.stream", "-e", "udp.length")]


@pytest.mark.parametrize("args", FORMS, ids=[" ".join(a) or "summary" for a in FORMS])
def test_fragments_as_tshark(fragmented, args, protodump_run, standard_run):
    for path in fragmented:
        same_as_tshark(path, args, protodump_run, standard_run)


def test_the_protocol_hierarchy_as_tshark(fragmented, tshark_run):
    """io,phs: a reassembled datagram counts under IP as its UDP and game layers; IPv6's fragment header is no
    level of its own (its protocol item sits inside the IPv6 one)."""
    from test_stats import phs_rows
    for path in fragmented:
        ours = protodump_phs(path)
        theirs = tshark_run("-q", "-z", "io,phs", "-r", str(path)).stdout
        assert phs_rows(ours) == phs_rows(theirs), path.name


def protodump_phs(path: Path) -> str:
    return subprocess.run([*PROTODUMP, "-q", "-z", "io,phs", str(path)], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def pings(tmp_path_factory) -> Path:
    """Echo requests and replies over IPv4 and IPv6: small ones, and large ones cut into fragments (in order, or
    the last fragment first); a request nobody answers, small and large; a reply answered twice; an IPv6 echo
    behind an atomic fragment header and a hop-by-hop header; requests to multicast groups; ICMP and ICMPv6 errors quoting a UDP datagram with
    a payload (tshark's data layer, on the top level of io,phs); a UDP datagram no dissector takes, in fragments."""
    from scapy.all import (ICMP, IP, UDP, Ether, ICMPv6DestUnreach, ICMPv6EchoReply, ICMPv6EchoRequest, IPv6,
                           IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, fragment, fragment6, wrpcap)
    e = Ether(src=CLIENT, dst=SERVER)
    out = []

    def add(datagram, reverse=False):
        v6 = datagram.haslayer(IPv6)
        if len(datagram) <= 1500:
            out.append(e / datagram)
            return
        pieces = [e / f for f in (fragment6(datagram, 1280) if v6 else fragment(datagram, 1480))]
        out.extend(reversed(pieces) if reverse else pieces)

    for seq, size, reverse, answered in ((1, 56, False, True), (2, 3000, False, True), (3, 4000, True, True),
                                         (4, 56, False, False), (5, 3000, False, False)):
        add(IP(src="10.0.0.1", dst="10.0.0.2", id=seq) / ICMP(type=8, id=7, seq=seq) / (b"x" * size), reverse)
        v6 = IPv6(src="fd00::1", dst="fd00::2")
        if size > 1000:
            v6 = v6 / IPv6ExtHdrFragment(id=seq)       # (fragment6 cuts where the packet has this header)
        add(v6 / ICMPv6EchoRequest(id=9, seq=seq, data=b"y" * size), reverse)
        if answered:
            add(IP(src="10.0.0.2", dst="10.0.0.1", id=100 + seq) / ICMP(type=0, id=7, seq=seq) / (b"x" * size),
                reverse)
            v6 = IPv6(src="fd00::2", dst="fd00::1")
            if size > 1000:
                v6 = v6 / IPv6ExtHdrFragment(id=100 + seq)
            add(v6 / ICMPv6EchoReply(id=9, seq=seq, data=b"y" * size), reverse)
    add(IP(src="10.0.0.2", dst="10.0.0.1", id=99) / ICMP(type=0, id=7, seq=1) / (b"x" * 56))     # again
    # to multicast groups, nobody answering (-2: " (multicast)", no warning)
    add(IP(src="10.0.0.1", dst="239.1.2.3", id=98) / ICMP(type=8, id=7, seq=8) / (b"x" * 56))
    add(IPv6(src="fd00::1", dst="ff02::1") / ICMPv6EchoRequest(id=9, seq=8, data=b"y" * 56))
    add(IPv6(src="fd00::1", dst="fd00::2") / IPv6ExtHdrHopByHop() / IPv6ExtHdrFragment(id=77)
        / ICMPv6EchoRequest(id=9, seq=6, data=b"atomic"))
    quoted = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=40000, dport=40001) / b"abc")
    add(IP(src="10.0.0.2", dst="10.0.0.1") / ICMP(type=3, code=3) / quoted)
    quoted6 = bytes(IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=40000, dport=40001) / b"abc")
    add(IPv6(src="fd00::2", dst="fd00::1") / ICMPv6DestUnreach(code=4) / quoted6)
    # a UDP datagram no dissector takes, from fragments: its data layer and -x read the reassembled bytes
    add(IP(src="10.0.0.1", dst="10.0.0.2", id=55) / UDP(sport=40000, dport=40001) / (b"u" * 4000))
    for k, q in enumerate(out):
        q.time = 1795285865 + 0.001 * k
    path = tmp_path_factory.mktemp("pings") / "pings.pcap"
    wrpcap(str(path), out)
    return path


def test_the_pings_hold_reassembled_answered_and_unanswered_echoes(pings):
    """(What the comparisons below stand on.)"""
    lines = subprocess.run([*PROTODUMP, "-2", str(pings)], capture_output=True, text=True, check=True).stdout
    assert lines.count("Fragmented IP protocol (proto=ICMP 1") >= 6 and lines.count("IPv6 fragment (off=") >= 6
    assert lines.count("Echo (ping) request  id=0x0007, seq=2/512, ttl=64 (reply in ") == 1
    assert lines.count("(no response found!)") == 5 and lines.count("(reply in ") == 6
    assert lines.count(" (multicast)") == 2
    tree = subprocess.run([*PROTODUMP, "-V", str(pings)], capture_output=True, text=True, check=True).stdout
    assert tree.count("[Reassembled IPv4 length: 3008]") == 3 and tree.count("Data (4000 bytes)") == 5


@pytest.mark.parametrize("args", FORMS + [("-x",), ("-2", "-x", "-T", "json"), ("-2", "-T", "ek"),
                                          ("-2", "-Y", "icmp.no_resp || icmpv6.resp_in")],
                         ids=lambda a: " ".join(a) or "summary")
def test_echoes_over_fragments_and_their_answers_as_tshark(pings, args, protodump_run, standard_run):
    """ICMP and ICMPv6 read from the datagram their last fragment completes (checksums, the Info column, the
    echo's data); under -2, each request's reply or "No response seen" with its expert, as tshark's second pass."""
    same_as_tshark(pings, args, protodump_run, standard_run)


@pytest.mark.parametrize("args", [(), ("-2",)], ids=["one pass", "-2"])
def test_the_pings_pdml_as_tshark(pings, args, protodump_run, standard_run):
    """Where the items without bytes sit (the reply's frame, "No response seen" and its expert), the IPv6 item's
    length over its extension headers, an unclaimed reassembled payload's bytes."""
    from test_pdml import head, packets
    ours, theirs = protodump_run("-T", "pdml", *args, str(pings)), standard_run("-T", "pdml", *args, "-r", str(pings))
    assert head(ours.stdout) == head(theirs.stdout)
    assert packets(ours.stdout) == packets(theirs.stdout)


def test_the_pings_protocol_hierarchy_as_tshark(pings, standard_run):
    from test_stats import phs_rows
    theirs = standard_run("-q", "-z", "io,phs", "-r", str(pings)).stdout
    assert phs_rows(protodump_phs(pings)) == phs_rows(theirs)
    assert ["icmp", "data"] in [[row[1] for row in pair] for pair in zip(phs_rows(theirs), phs_rows(theirs)[1:])]


# Recorded on a veth pair between two network namespaces (dumpcap on one end, as the links came up): the kernel's
# own IPv6 traffic (MLDv2 reports, duplicate address detection's neighbour solicitations with a nonce option,
# router solicitations, link-local SLAAC addresses from universal and local MAC addresses), neighbour discovery,
# UDP over IPv6 in fragments, ARP, a TCP connection over IPv4 and a port unreachable.
LINK_NOISE = Path(__file__).parent / "data" / "ipv6-link-noise.pcapng"
LINK_FORMS = [(), ("-V",), ("-T", "json"), ("-x", "-T", "json"), ("-T", "ek"), ("-x", "-T", "ek"),
              ("-q", "-z", "conv,ipv6"), ("-q", "-z", "endpoints,ipv6"), ("-q", "-z", "expert"),
              ("-q", "-z", "ipv6_srcdst,tree"), ("-q", "-z", "ipv6_dests,tree"),
              ("-T", "fields", "-e", "ipv6.src_slaac_mac", "-e", "ipv6.slaac_mac", "-e", "icmpv6.opt.nonce"),
              ("-Y", "ipv6.slaac_mac == 00:1d:7e:d9:94:c0 || icmpv6.opt.nonce")]


@pytest.mark.parametrize("args", LINK_FORMS, ids=lambda a: " ".join(a) or "summary")
def test_a_links_own_ipv6_traffic_as_tshark(args, protodump_run, standard_run):
    """The MAC address a SLAAC address holds (a universal one only), the nonce option, the link-layer address
    options' items; IPv6's conversations and endpoints leave out the fragments that complete no datagram."""
    same_as_tshark(LINK_NOISE, args, protodump_run, standard_run)


def test_the_link_noise_pdml_as_tshark(protodump_run, standard_run):
    from test_pdml import head, packets
    ours, theirs = protodump_run("-T", "pdml", str(LINK_NOISE)), standard_run("-T", "pdml", "-r", str(LINK_NOISE))
    assert head(ours.stdout) == head(theirs.stdout) and packets(ours.stdout) == packets(theirs.stdout)


def test_the_link_noise_holds_what_it_is_kept_for():
    tree = subprocess.run([*PROTODUMP, "-V", str(LINK_NOISE)], capture_output=True, text=True, check=True).stdout
    slaac = [line for line in tree.splitlines() if "[Source SLAAC MAC: " in line]      # (names: the manuf data's)
    assert tree.count("ICMPv6 Option (Nonce)") == 4 and len(slaac) == 3
    assert all(line.endswith("(00:1d:7e:d9:94:c0)]") for line in slaac)     # not fe80::5054:ff:fe12:3456's: its
    # MAC address is a local one
    assert tree.count("[2 IPv6 Fragments") == 2 and tree.count("[3 IPv6 Fragments") == 2


@pytest.fixture(scope="module")
def extension_headers(tmp_path_factory) -> Path:
    """UDP over IPv6 behind a hop-by-hop, a destination options and a routing header."""
    from scapy.all import UDP, Ether, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, wrpcap
    path = tmp_path_factory.mktemp("extensions") / "extensions.pcap"
    base = Ether(src=CLIENT, dst=SERVER) / IPv6(src="fd00::a", dst="fd00::b")
    pkts = [base / ext / UDP(sport=5000, dport=5001) / b"hello"
            for ext in (IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt(), IPv6ExtHdrRouting(addresses=["fd00::c"]))]
    for k, q in enumerate(pkts):
        q.time = 1795285865 + k
    wrpcap(str(path), pkts)
    return path


def test_extension_headers_as_tshark(extension_headers, protodump_run, standard_run):
    """An extension header's fields carry its own protocol's EK prefix (ipv6_hopopts_ipv6_hopopts_nxt), and no
    extension header is a level of io,phs."""
    from test_stats import phs_rows
    same_as_tshark(extension_headers, ("-T", "ek"), protodump_run, standard_run)
    # the IPv6 taps count the destination the header holds, not the routing header's last address (which the
    # Destination column and the UDP conversation show)
    for table in ("conv,ipv6", "endpoints,ipv6", "ipv6_dests,tree", "ipv6_hosts,tree", "conv,udp"):
        same_as_tshark(extension_headers, ("-q", "-z", table), protodump_run, standard_run)
    theirs = standard_run("-q", "-z", "io,phs", "-r", str(extension_headers)).stdout
    assert phs_rows(protodump_phs(extension_headers)) == phs_rows(theirs)
    assert [row[1] for row in phs_rows(theirs)][:4] == ["eth", "ipv6", "udp", "data"]


def _segments_in_fragments(session: str, count: int, v6: bool = False) -> list:
    """The session's first `count` TCP segments or SCTP packets; those over 200 bytes as IP fragments of 128 (IPv6:
    200) bytes, every fourth one last fragment first. (A path MTU under the sender's segment size: a tunnel's.)"""
    from scapy.all import IP, TCP, Ether, IPv6, IPv6ExtHdrFragment, fragment, fragment6, rdpcap
    out = []
    for i, p in enumerate(rdpcap(str(CAPTURES_DIR / session))[:count]):
        ip = IP(bytes(p[IP]))
        ip.id = 3 * i + 1
        if v6:
            l4 = ip.payload.copy()
            if TCP in l4:
                del l4[TCP].chksum
            ip = IPv6(src="fd00::" + ip.src.split(".")[-1], dst="fd00::" + ip.dst.split(".")[-1]) / l4
        if len(ip) <= 200:
            out.append(Ether(src=CLIENT, dst=SERVER) / ip)
            continue
        if v6:
            ip = IPv6(src=ip.src, dst=ip.dst) / IPv6ExtHdrFragment(id=i + 5) / ip.payload
        pieces = [Ether(src=CLIENT, dst=SERVER) / f for f in (fragment6(ip, 200) if v6 else fragment(ip, 128))]
        if i % 4 == 1:
            pieces.reverse()
        out.extend(pieces)
    return out


@pytest.fixture(scope="module")
def segments(tmp_path_factory) -> list[Path]:
    """TCP and SCTP over IP fragments: Rutentoy's segments (IPv4 and IPv6) cut in PDUs of their own, Iceball's file
    transfer, Freeblox's HTTP upgrade, WebSocket and inflated messages, Rutentoy over SCTP (IPv4 and IPv6)."""
    return _captures(tmp_path_factory, "segments", _segments_in_fragments,
                     (("rutentoy", "rutentoy-segmentation.pcap", 60, False),
                      ("rutentoy-v6", "rutentoy-messages.pcap", 40, True),
                      ("iceball", "iceball-tcp-session.pcap", 60, False),
                      ("freeblox", "freeblox-session.pcap", 40, False),
                      ("sctp", "rutentoy-sctp.pcap", 80, False),
                      ("sctp-v6", "rutentoy-sctp.pcap", 80, True)))


def test_the_segment_captures_hold_reassembled_segments_of_every_game(segments):
    """(What the comparisons below are worth: every capture has segments that only reassembly makes whole, and
    each game's PDUs in them.)"""
    for path, game in zip(segments, ("rutentoy", "rutentoy", "iceball", "freeblox", "rutentoy", "rutentoy")):
        out = subprocess.run([*PROTODUMP, "-V", "-Y", f"{game} && (ip.fragments || ipv6.fragments)", str(path)],
                             capture_output=True, text=True, check=True).stdout
        assert out.count("Frame ") >= 2, path.name
        assert "Reassembled IPv" in out and " Fragments (" in out, path.name


SEGMENT_FORMS = [(), ("-T", "json"), ("-V",), ("-x",), ("-T", "ek"), ("-2", "-V"),
                 ("-q", "-z", "expert"), ("-q", "-z", "conv,tcp"),
                 ("-q", "-z", "follow,tcp,ascii,0"),
                 ("-T", "fields", "-e", "tcp.stream", "-e", "tcp.len", "-e", "tcp.seq", "-e", "sctp.data_tsn",
                  "-e", "ip.fragment.count", "-e", "ipv6.fragment.count")]


@pytest.mark.parametrize("args", SEGMENT_FORMS, ids=[" ".join(a) or "summary" for a in SEGMENT_FORMS])
def test_segments_over_fragments_as_tshark(segments, args, protodump_run, standard_run):
    for path in segments:
        same_as_tshark(path, args, protodump_run, standard_run)


def test_the_segments_pdml_as_tshark(segments, protodump_run, standard_run):
    """(A reassembly's long label, its pieces appended, cut by Wireshark's label buffer with no mark.)"""
    from test_pdml import head, packets
    for path in segments:
        ours, theirs = protodump_run("-T", "pdml", str(path)), standard_run("-T", "pdml", "-r", str(path))
        assert head(ours.stdout) == head(theirs.stdout), path.name
        assert packets(ours.stdout) == packets(theirs.stdout), path.name


def test_the_segments_protocol_hierarchy_as_tshark(segments, tshark_run):
    """io,phs: a segment from fragments counts under IP as its TCP (or SCTP) and game layers."""
    from test_stats import phs_rows
    for path in segments:
        assert phs_rows(protodump_phs(path)) == phs_rows(tshark_run("-q", "-z", "io,phs", "-r", str(path)).stdout), \
            path.name


def test_a_capture_with_fragments_is_read_by_one_process(fragmented):
    """-j 2 cannot share out a datagram's fragments: it says so and reads in one process, the same output."""
    path = fragmented[1]
    one = subprocess.run([*PROTODUMP, "-j", "1", "-T", "json", str(path)], capture_output=True, text=True)
    two = subprocess.run([*PROTODUMP, "-j", "2", "-T", "json", str(path)], capture_output=True, text=True,
                         env={**__import__("os").environ, "PROTODUMP_JOBS_VERBOSE": "1"})
    assert two.stdout == one.stdout
    assert "one process (an IP fragment at frame" in two.stderr


# --- the table -------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 3000), cut=st.integers(8, 1480), order=st.randoms(use_true_random=False),
       lose=st.booleans())
def test_prop_a_datagram_completes_with_its_last_missing_piece_whatever_the_order(size, cut, order, lose):
    payload = bytes(i % 251 for i in range(size))
    cut -= cut % 8
    pieces = [(at, payload[at:at + cut]) for at in range(0, size, cut)]
    order.shuffle(pieces)
    if lose and len(pieces) > 1:
        pieces.pop()
    table, used = IpFragments(), PENDING.used
    results = [table.add("k", at, data, at + len(data) < size, frame) for frame, (at, data) in enumerate(pieces)]
    if lose and len(results) < -(-size // cut):
        assert results == [None] * len(results) and len(table.pending) == 1
        table.pending.clear()
    else:
        assert results[:-1] == [None] * (len(results) - 1)
        shown, whole = results[-1]
        assert whole == payload and [s[1] for s in shown] == sorted(at for at, _ in pieces)
        assert not table.pending
    PENDING.used = used


def test_overlaps_and_pieces_past_the_end_give_the_datagram_up_and_its_bytes_back():
    used = PENDING.used
    table = IpFragments()
    assert table.add("a", 0, b"x" * 16, True, 1) is None
    assert table.add("a", 8, b"y" * 16, True, 2) is None            # overlaps the first: given up
    assert not table.pending and PENDING.used == used
    assert table.add("b", 16, b"x" * 8, False, 3) is None           # the end: 24
    assert table.add("b", 24, b"y" * 8, True, 4) is None            # past it: given up
    assert not table.pending and PENDING.used == used
    assert table.add("c", 65528, b"z" * 16, False, 5) is None       # over 65,535 bytes
    assert not table.pending


def test_pending_datagrams_are_bounded_in_number_and_by_the_budget():
    used = PENDING.used
    table = IpFragments(limit=3)
    for key in range(10):
        table.add(key, 0, b"x" * 8, True, key)
    assert list(table.pending) == [7, 8, 9]
    table.pending.clear()
    PENDING.used = used
    limit, PENDING.limit = PENDING.limit, used + 500
    try:
        table = IpFragments()
        assert table.add("a", 0, b"x" * 200, True, 1) is None and table.refused == 0
        assert table.add("a", 200, b"x" * 200, True, 2) is None and table.refused == 1
        assert not table.pending and PENDING.used == used
    finally:
        PENDING.limit = limit
    assert DATAGRAM_LIMIT == IpFragments().limit


def test_the_budget_refusal_is_an_expert_note_and_the_fragments_stay_fragments(fragmented):
    out = subprocess.run([*PROTODUMP, "-o", "protodump.reassembly_budget:200", "-q", "-z", "expert",
                          str(fragmented[0])], capture_output=True, text=True, check=True).stdout
    assert "Reassemble               IPv4  Pending reassembly exceeds the budget of 200 bytes" in out
    summary = subprocess.run([*PROTODUMP, "-o", "protodump.reassembly_budget:200", str(fragmented[0])],
                             capture_output=True, text=True, check=True).stdout
    assert "Fragmented IP protocol" in summary
