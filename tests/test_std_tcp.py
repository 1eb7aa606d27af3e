"""TCP conversation analysis against tshark 4.0 + plugin (standard_run), on small scapy-made captures: a SYN that
reuses a port pair (a new tcp.stream, "TCP Port numbers reused", the earlier connection's game state dropped in
both halves, its lifetime no longer freeing the new one)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import CAPTURES_DIR, PROTODUMP
from test_std_details import same_as_tshark

RUTENTOY = Path(__file__).resolve().parent.parent / "captures" / "rutentoy-messages.pcap"


def _connection(stream: bytes, t0: float, cseq: int, sseq: int, cuts, gaps, ws: int, end: str, port: int):
    """One connection from 10.0.0.1:40000 to 10.0.0.2:`port`: the handshake, then the server sends
    stream[previous cut:cut] after each gap (each segment acknowledged), then FIN both ways or the client's RST."""
    from scapy.all import IP, TCP, Ether
    e = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")

    def c2s(fl, seq, ack, opts=(), win=502):
        return e / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=40000, dport=port, flags=fl, seq=seq, ack=ack,
                                                            window=win, options=list(opts))

    def s2c(fl, seq, ack, payload=b"", opts=(), win=509):
        return e / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=port, dport=40000, flags=fl, seq=seq, ack=ack,
                                                            window=win, options=list(opts)) / payload
    out = [(t0, c2s("S", cseq, 0, [("MSS", 1460), ("WScale", ws)], 64240)),
           (t0 + 0.001, s2c("SA", sseq, cseq + 1, opts=[("MSS", 1460), ("WScale", ws)], win=65160)),
           (t0 + 0.002, c2s("A", cseq + 1, sseq + 1))]
    t, at = t0 + 0.002, 0
    for cut, gap in zip(cuts, gaps):
        t += gap
        out.append((t, s2c("PA", sseq + 1 + at, cseq + 1, stream[at:cut])))
        at = cut
        out.append((t + 0.0005, c2s("A", cseq + 1, sseq + 1 + at)))
    if end == "FIN":
        out += [(t + 0.01, s2c("FA", sseq + 1 + at, cseq + 1)), (t + 0.011, c2s("FA", cseq + 1, sseq + 2 + at)),
                (t + 0.012, s2c("A", sseq + 2 + at, cseq + 2))]
    else:
        out.append((t + 0.01, c2s("R", cseq + 1, 0)))
    return out


@pytest.fixture(scope="module")
def reuse_capture(tmp_path_factory) -> Path:
    """Three Rutentoy connections on one port pair: the first ends (FIN) with half a message pending; the second
    SYN comes 2 s later and its messages straddle the first's end + 5 s (engine.lifetime's linger); the third
    SYN 1 s after the second's end, its last segment 4.5 s later, ended by RST."""
    from scapy.all import TCP, rdpcap, wrpcap
    stream = b"".join(bytes(p[TCP].payload) for p in rdpcap(str(RUTENTOY))
                      if TCP in p and p[TCP].sport == 29778 and len(p[TCP].payload))
    pkts = _connection(stream, 1700000000.0, 1000, 5000, [140, 175], [0.01, 0.01], 7, "FIN", 29778)
    pkts += _connection(stream, pkts[-1][0] + 2.0, 900000, 700000, [100, 210, 350, 490], [0.01, 1.5, 1.6, 1.0], 5,
                        "FIN", 29778)
    pkts += _connection(stream, pkts[-1][0] + 1.0, 3000000, 4000000, [70, 100], [0.01, 4.5], 3, "RST", 29778)
    for t, p in pkts:
        p.time = t
    path = tmp_path_factory.mktemp("reuse") / "reuse.pcap"
    wrpcap(str(path), [p for _, p in pkts])
    return path


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "tcp.stream", "-e", "tcp.window_size", "-e",
                                   "tcp.completeness", "-e", "rutentoy.message.cookie"),
                                  ("-Y", "tcp.analysis.reused_ports")])
def test_syn_reusing_a_port_pair(reuse_capture, args, protodump_run, standard_run):
    """One tcp.stream per connection (the SYN and SYN/ACK in the same one, past the earlier end + 5 s), its window
    scale kept, "TCP Port numbers reused" on each new SYN, and each connection's messages decoded from a fresh
    stream state (the plugin too: rt.conversation drops the pair's state at a new tcp.stream)."""
    same_as_tshark(reuse_capture, args, protodump_run, standard_run)


def test_syn_reusing_a_port_pair_in_workers(reuse_capture, protodump_run):
    """-j numbers the streams and frees the conversations as one process does."""
    one = protodump_run("-T", "json", str(reuse_capture))
    two = protodump_run("-j", "2", "-T", "json", str(reuse_capture))
    assert one.stdout and one.stdout == two.stdout


def _write(tmp_path_factory, folder: str, name: str, pkts, step: float = 1) -> Path:
    """A pcap of scapy packets `step` seconds apart, in a fresh folder."""
    from scapy.all import wrpcap
    for i, p in enumerate(pkts):
        p.time = 1700000000 + i * step
    path = tmp_path_factory.mktemp(folder) / name
    wrpcap(str(path), pkts)
    return path


def _segment(sport: int, opts: bytes = b"", words: int | None = None, payload: bytes = b"", flags: str = "A"):
    """A segment from 10.0.0.1:`sport` to port 5000 with raw option bytes and a data offset of `words` (default:
    the header's own length)."""
    from scapy.all import IP, TCP, Ether, Raw
    raw = bytearray(bytes(TCP(sport=sport, dport=5000, flags=flags, seq=1000, ack=2000, window=502)) + opts)
    raw[12] = ((words or len(raw) // 4) << 4) | (raw[12] & 0x0F)
    return Ether(bytes(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") /
                       IP(src="10.0.0.1", dst="10.0.0.2", proto=6) / Raw(bytes(raw) + payload)))


@pytest.fixture(scope="module")
def short_capture(tmp_path_factory) -> Path:
    """Segments whose data offset runs past their end (tshark's "Short segment"), each on its own port: no
    options there at all, an option whose length runs past the options, a whole MSS then nothing, a SYN's
    timestamps option cut inside its bytes (ContainedBoundsError), a FIN-ACK with a whole window scale."""
    seg = _segment
    pkts = [seg(40001, words=15), seg(40002, words=8, payload=b"ab"), seg(40003, b"\x02\x04\x05\xb4", 8),
            seg(40004, b"\x01\x01\x08\x0a\x00\x00", 9, flags="S"), seg(40005, b"\x03\x03\x07", 6, flags="FA")]
    return _write(tmp_path_factory, "short", "short.pcap", pkts)


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-Y", "tcp.short_segment || _ws.malformed")])
def test_short_segment(short_capture, args, protodump_run, standard_run):
    """The header with raw sequence numbers and window, the options as far as their bytes go, then tshark's
    exception ([Malformed Packet], or its ContainedBoundsError text); no length in the Info."""
    same_as_tshark(short_capture, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def sack_capture(tmp_path_factory) -> Path:
    """ACKs, each on its own port, with SACK options: too short for a block (3, 4 and 9 bytes: tshark's D-SACK
    read then throws), one block and a stray byte pair (D-SACK), one block above the acknowledgement."""
    options = [b"\x01\x01\x05\x03\x00\x00\x00\x00", b"\x01\x01\x05\x04\x00\x00\x07\xd0", b"\x05\x09" + bytes(7),
               b"\x05\x0c" + bytes(10), b"\x01\x01\x05\x0a\x00\x00\x07\xd0\x00\x00\x07\xd8",
               b"\x01\x01\x05\x12\x00\x00\x07\xd8\x00\x00\x07\xe0\x00\x00\x07\xd0\x00\x00\x07\xe8"]
    pkts = [_segment(40010 + i, o + b"\x00" * (-len(o) % 4)) for i, o in enumerate(options)]
    return _write(tmp_path_factory, "sack", "sack.pcap", pkts)


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "tcp.options.sack_le", "-e", "tcp.options.sack.count",
                                   "-e", "tcp.options.sack.dsack_le")])
def test_sack_options(sack_capture, args, protodump_run, standard_run):
    """SACK edges relative to the acknowledged side, their count, D-SACK edges and expert, a block cut short;
    a SACK too short for tshark's D-SACK read ends the TCP layer in an exception."""
    same_as_tshark(sack_capture, args, protodump_run, standard_run)


def _flow(sport: int, scale: int, script) -> list:
    """A connection's segments from a compact script: (direction ">" or "<", flags, relative seq, relative ack,
    payload, window)."""
    from scapy.all import IP, TCP, Ether
    e = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
    out = []
    for way, fl, seq, ack, payload, win in script:
        a, b = ("10.0.0.1", "10.0.0.2") if way == ">" else ("10.0.0.2", "10.0.0.1")
        sp, dp = (sport, 5000) if way == ">" else (5000, sport)
        base_s, base_a = (1000, 5000) if way == ">" else (5000, 1000)
        opts = [("MSS", 1460), ("WScale", scale)] if "S" in fl else []
        out.append(e / IP(src=a, dst=b) / TCP(sport=sp, dport=dp, flags=fl, seq=base_s + seq, ack=base_a + ack if ack
                                               else 0, window=win, options=opts) / payload)
    return out


@pytest.fixture(scope="module")
def analysis_capture(tmp_path_factory) -> Path:
    """Two connections on no game port: a window update, duplicate ACKs, a retransmission (its RTO), a spurious
    one, a keep-alive and its ACK, a zero window, a zero window probe and its ACK, a lost segment, an out-of-order
    one, ACKed unseen data; then a full window, a fast retransmission after two duplicate ACKs."""
    one = _flow(40000, 7, [(">", "S", 0, 0, b"", 64240), ("<", "SA", 0, 1, b"", 65160), (">", "A", 1, 1, b"", 502),
                           (">", "A", 1, 1, b"", 600), (">", "A", 1, 1, b"", 600), (">", "PA", 1, 1, b"hello", 600),
                           (">", "PA", 1, 1, b"hello", 600), ("<", "A", 1, 6, b"", 509),
                           (">", "PA", 1, 1, b"hello", 600), (">", "A", 5, 1, b"", 600), ("<", "A", 1, 6, b"", 509),
                           ("<", "A", 1, 6, b"", 0), (">", "PA", 6, 1, b"x", 600), ("<", "A", 1, 6, b"", 0),
                           ("<", "A", 1, 6, b"", 509), (">", "PA", 12, 1, b"later", 600),
                           (">", "PA", 7, 1, b"early", 600), ("<", "A", 1, 17, b"", 509), ("<", "A", 1, 17, b"", 509),
                           ("<", "A", 1, 17, b"", 509), (">", "PA", 17, 1, b"more!", 600),
                           (">", "FA", 22, 1, b"", 600), ("<", "FA", 1, 23, b"", 509), (">", "A", 23, 2, b"", 600)])
    ten = b"0123456789"
    two = _flow(40001, 0, [(">", "S", 0, 0, b"", 64240), ("<", "SA", 0, 1, b"", 20), (">", "A", 1, 1, b"", 502),
                           ("<", "A", 1, 1, b"", 20), (">", "PA", 1, 1, ten, 502), (">", "PA", 11, 1, ten, 502),
                           ("<", "A", 1, 11, b"", 20), ("<", "A", 1, 11, b"", 20), ("<", "A", 1, 11, b"", 20),
                           (">", "PA", 11, 1, ten, 502), ("<", "A", 1, 21, b"", 20), (">", "PA", 21, 1, b"abc", 502),
                           (">", "PA", 21, 1, b"abc", 502), ("<", "FA", 1, 24, b"", 20), (">", "FA", 24, 2, b"", 502),
                           ("<", "A", 2, 25, b"", 20)])
    pkts = one + two
    return _write(tmp_path_factory, "analysis", "analysis.pcap", pkts, 0.0005)


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "tcp.analysis.flags", "-e", "tcp.analysis.duplicate_ack_num",
                                   "-e", "tcp.analysis.rto_frame", "-e", "frame.protocols"),
                                  ("-Y", "tcp.analysis.window_update || tcp.analysis.duplicate_ack")])
def test_sequence_analysis(analysis_capture, args, protodump_run, standard_run):
    """tcp_analyze_sequence_number's flags as tshark prints them (experts, Info tags in its order), and the
    payload of no dissector as data unless TCP calls it retransmitted ("Retransmitted TCP segment data")."""
    same_as_tshark(analysis_capture, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def quoting_tcp_capture(tmp_path_factory) -> Path:
    """ICMP errors quoting a TCP segment: its first 8 bytes, its whole header, with its payload, with options
    (fragmentation needed: the next hop's MTU), only 4 bytes, 12 bytes."""
    from scapy.all import ICMP, IP, TCP, Ether
    e = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
    seg = IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=5000, dport=40000, flags="PA", seq=777, ack=888)
    plain = bytes(seg / b"payload")
    opts = bytes(IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=5000, dport=40000, flags="PA", seq=777, ack=888,
                                                          options=[("MSS", 1460), ("NOP", None), ("NOP", None)]) /
                 b"payload")
    outer = e / IP(src="10.0.0.9", dst="10.0.0.2")
    pkts = [outer / ICMP(type=3, code=3) / plain[:28], outer / ICMP(type=3, code=1) / plain[:40],
            outer / ICMP(type=11, code=0) / plain, outer / ICMP(type=3, code=4, nexthopmtu=1400) / opts,
            outer / ICMP(type=3, code=3) / plain[:24], outer / ICMP(type=3, code=3) / plain[:32]]
    return _write(tmp_path_factory, "icmp-tcp", "icmp-tcp.pcap", pkts)


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "tcp.stream", "-e", "tcp.seq", "-e", "data.len"),
                                  ("-Y", "tcp.completeness == 4"), ("-T", "jsonraw"), ("-T", "json", "-x"),
                                  ("-T", "ek")])
def test_icmp_error_quoting_tcp(quoting_tcp_capture, args, protodump_run, standard_run):
    """The quoted segment as tshark's TCP shows it in an error packet: ports and raw sequence number, then with a
    whole header its conversation (stream, completeness, times), header and options, its payload as data, after
    the plugin's heuristics tshark's TCP offered it to (wslua's `_ws.lua.fake` for each, in -T json)."""
    same_as_tshark(quoting_tcp_capture, args, protodump_run, standard_run)
    if args == ("-T", "json"):
        theirs = standard_run(*args, "-r", str(quoting_tcp_capture)).stdout
        assert re.search(r'( *)"_ws\.lua\.fake": "",\n\1"data": \{', theirs)    # the item this case is about


def _with_errors(session: str) -> list:
    """The session with an error after every third segment with payload (and every third SCTP packet): ICMP
    "fragmentation needed" quoting up to 548 bytes of it as Linux does, ICMPv6 "packet too big" for IPv6."""
    from scapy.all import ICMP, IP, SCTP, TCP, Ether, ICMPv6PacketTooBig, IPv6, rdpcap
    out = []
    for i, p in enumerate(rdpcap(str(CAPTURES_DIR / session))):
        ip = p[IP] if IP in p else p[IPv6]
        out.append(p if p.haslayer(Ether) else Ether() / ip)
        if i % 3 or not (TCP in p and len(p[TCP].payload) or SCTP in p):
            continue
        if IP in p:
            out.append(Ether() / IP(src="10.9.9.9", dst=ip.src) / ICMP(type=3, code=4, nexthopmtu=1400)
                       / bytes(ip)[:548])
        else:
            out.append(Ether() / IPv6(src="fd00::99", dst=ip.src) / ICMPv6PacketTooBig(mtu=1280) / bytes(ip)[:1184])
    return out


GAME_SESSIONS = ("rutentoy-messages.pcap", "iceball-tcp-session.pcap", "iceball-tcp-port-30000.pcap",
                 "rutentoy-midstream.pcap", "rutentoy-lossy-v6.pcap")


@pytest.fixture(scope="module")
def quoting_game_segments(tmp_path_factory) -> list[Path]:
    """Game sessions over TCP with ICMP errors quoting their segments: PDUs whole in the quote; a connection found
    by its port, one a heuristic claimed (its conversation's dissector), one without its SYN (no server port);
    IPv6."""
    return [_write(tmp_path_factory, "icmp-game", f"errors-{name}", _with_errors(name), 0.001)
            for name in GAME_SESSIONS]


def test_quoted_segments_leave_their_connection_alone(quoting_game_segments):
    """A quoted segment is not the stream's: every game PDU of the session decodes as without the errors (the
    plugin once took the quote's raw sequence number for the stream's and lost the rest of the direction)."""
    for name, path in zip(GAME_SESSIONS, quoting_game_segments):
        game = name.split("-")[0]
        plain = subprocess.run([*PROTODUMP, "-T", "fields", "-e", f"{game}", str(CAPTURES_DIR / name)],
                               capture_output=True, text=True, check=True).stdout
        quoted = subprocess.run([*PROTODUMP, "-Y", "!icmp && !icmpv6", "-T", "fields", "-e", f"{game}", str(path)],
                                capture_output=True, text=True, check=True).stdout
        assert quoted == plain and sum(1 for line in plain.splitlines() if line) >= 2, name
        errors = subprocess.run([*PROTODUMP, "-Y", "icmp.type == 3 || icmpv6.type == 2", str(path)],
                                capture_output=True, text=True, check=True).stdout
        assert errors.count("\n") >= 1, name


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-T", "ek"), ("-q", "-z", "expert"),
                                  ("-T", "fields", "-e", "tcp.stream", "-e", "tcp.seq", "-e", "data.len",
                                   "-e", "frame.protocols")])
def test_quoted_game_segments_as_tshark(quoting_game_segments, args, protodump_run, standard_run):
    """In the error, the plugin says no to the quoted payload wherever tshark's TCP offers it (the connection's
    claimed dissector, the server port, the lower and the higher port, the heuristic list: wslua's fake item
    for each call), and it stays data; in ICMPv6 the quoted sequence number is where a segment has it."""
    for path in quoting_game_segments:
        same_as_tshark(path, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def ack_nonzero_capture(tmp_path_factory) -> Path:
    """A SYN and a RST without the ACK flag but with an acknowledgment number."""
    from scapy.all import IP, TCP, Ether
    e = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") / IP(src="10.0.0.1", dst="10.0.0.2")
    pkts = [e / TCP(sport=40100, dport=5000, flags="S", seq=10, ack=2000, options=[("MSS", 1460)]),
            e / TCP(sport=40101, dport=5000, flags="R", seq=10, ack=7)]
    return _write(tmp_path_factory, "ack-nonzero", "ack-nonzero.pcap", pkts)


@pytest.mark.parametrize("args", [("-V",), ("-T", "json"), ("-q", "-z", "expert"), ("-Y", "tcp.ack.nonzero")])
def test_ack_number_without_ack_flag(ack_nonzero_capture, args, protodump_run, standard_run):
    same_as_tshark(ack_nonzero_capture, args, protodump_run, standard_run)


LOSSY = Path(__file__).resolve().parent.parent / "captures"
# Not among the bundled captures, whose suites run every mode: under -2, tshark's websocket hands frame 48's message
# up before the frame's last fragments, and its Info column ends with theirs (protodump -2 does not follow that).
ROUNDS = Path(__file__).resolve().parent / "data" / "freeblox-lossy-rounds.pcap"


@pytest.mark.parametrize("name, args", [
    ("rutentoy-lossy.pcap", ("-T", "fields", "-e", "frame.number", "-e", "tcp.analysis.bytes_in_flight", "-e",
                             "tcp.analysis.push_bytes_sent", "-e", "tcp.options.sack.dsack", "-e", "frame.protocols")),
    ("rutentoy-lossy-close.pcap", ("-T", "fields", "-e", "frame.number", "-e", "tcp.analysis.bytes_in_flight")),
    ("iceball-tcp-lossy.pcap", ("-Y", "tcp.analysis.keep_alive", "-V")),
    ("rutentoy-lossy.pcap", ("-Y", "tcp.analysis.bytes_in_flight < tcp.len",)),
    ("rutentoy-lossy-v6.pcap", ("-V", "-c", "8")),
    ("rutentoy-lossy-v6.pcap", ("-T", "fields", "-e", "sll", "-e", "sll.pkttype", "-e", "sll.etype", "-e", "tcp.seq")),
    ("freeblox-lossy.pcap", ("-Y", "tcp.segment.overlap or _ws.malformed or tcp.analysis.out_of_order", "-V")),
    ("freeblox-lossy.pcap", ("-T", "fields", "-e", "frame.number", "-e", "tcp.segment_data", "-e", "_ws.malformed")),
    ("freeblox-lossy-fast.pcap", ("-Y", "tcp.analysis.fast_retransmission or tcp.analysis.out_of_order",)),
    ("freeblox-lossy-spurious.pcap", ("-Y", "tcp.analysis.spurious_retransmission", "-V")),
    ("freeblox-lossy-start.pcap", ("-Y", "tcp.analysis.fast_retransmission", "-V")),
    ("freeblox-lossy-rounds.pcap", ("-Y", "frame.number == 42 or frame.number == 48", "-V")),
    ("freeblox-lossy-rounds.pcap", ("-Y", "frame.number == 42 or frame.number == 48", "-T", "json", "-x")),
    ("freeblox-lossy-rounds.pcap", ()),
])
def test_lossy_recovery(name, args, protodump_run, standard_run):
    """Sessions recorded with a quarter of the segments dropped (tools/netns_record.py drop=): the peer's latest
    SACK blocks are taken off the bytes in flight, a FIN's virtual byte is not counted, the PSH count is shown only
    beside a non-zero bytes in flight, a keep-alive's byte goes to tshark's data dissector, not the game's, and a
    retransmitted SYN (acknowledgement number 0) empties the peer's unacknowledged list, so the handshake's ACK
    acknowledges nothing there. WebSocket (tshark's own reassembly): an out-of-order or fast-retransmitted segment
    falling in the pending PDU is stored there ("TCP segment data", listed with "[Segment overlap: True]" in the
    reassembled segments), one falling in a PDU reassembled before is a reassembly error; any late segment where
    such a PDU starts is "Retransmitted TCP segment data", stored nowhere; any other fast retransmission is
    dissected again (a WebSocket Ping), any other out-of-order segment shows nothing. A segment that completes a
    PDU and holds more is two rounds of desegment_tcp: websocket twice in frame.protocols, the completing bytes'
    "TCP segment data" after the reassembled PDU's size, the kept bytes' after the rest's."""
    path = LOSSY / name if (LOSSY / name).exists() else ROUNDS
    same_as_tshark(path, args, protodump_run, standard_run)
    if "-Y" in args:        # the filter's frames exist, so the comparison says something
        assert protodump_run(*args, str(path)).stdout.strip()


@pytest.mark.parametrize("name, args", [
    ("rutentoy-slow-reader.pcap", ("-Y", "tcp.analysis.window_full and rutentoy",)),
    ("rutentoy-slow-reader.pcap", ("-Y", "tcp.analysis.retransmission and tcp.analysis.window_full", "-V")),
    ("rutentoy-slow-reader.pcap", ("-Y", "tcp.analysis.zero_window or tcp.analysis.keep_alive or "
                                         "tcp.analysis.window_update",)),
    ("iceball-tcp-slow-reader.pcap", ("-Y", "tcp.analysis.rto", "-V")),
    ("iceball-tcp-slow-reader.pcap", ("-q", "-z", "expert")),
    ("freeblox-slow-reader.pcap", ()),
    ("freeblox-slow-reader.pcap", ("-Y", "tcp.analysis.zero_window or tcp.analysis.window_update", "-V")),
])
def test_slow_reader(name, args, protodump_run, standard_run):
    """Sessions recorded to a client with a small receive buffer that reads slowly (tools/netns_record.py
    slow_reader=): the window fills, zero windows and their probes, window updates. A frame that ends one PDU and
    holds another shows no analysis tag in its Info (the plugin clears the column fence to write the two
    messages' Info: lua/rt_stream.lua); a retransmission's RTO items come right after its expert, before a later
    flag's (Window Full). WebSocket: a segment that completes a message and holds more (two rounds of
    desegment_tcp) writes the first round's Info, then, after the fence, every message of the frame joined (the
    plugin joins them per frame: lua/rt_websocket.lua rt.ws_info)."""
    path = LOSSY / name
    same_as_tshark(path, args, protodump_run, standard_run)
    if "-Y" in args:
        assert protodump_run(*args, str(path)).stdout.strip()
