"""The bundled game sessions as other users' captures would hold them (tests/tmp, made with scapy from the
bundled ones): real Ethernet addresses (vendor names), an 802.1Q tag, Linux cooked v1 and v2 headers, IPv6
instead of IPv4, a Linux SCTP stack's SACK bundled before and after DATA, and IPv4 fragments of game datagrams
whose last fragment was lost. Whole frames against tshark 4.0 + plugin (standard_run): -T json, -V, summary,
-z expert."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import CAPTURES_DIR
from test_std_details import same_as_tshark

TMP = Path(__file__).resolve().parent / "tmp"
SESSIONS = ["enet-plain.pcap", "rutentoy-login-texture.pcap", "rutentoy-sctp.pcap", "iceball-tcp-session.pcap",
            "freeblox-session.pcap"]
KINDS = ["macs", "vlan", "sll", "sll2", "v6"]
CLIENT, SERVER = "00:1d:7e:d9:94:c0", "52:54:00:12:34:56"


def _variant(kind: str, p, client: bool):
    from scapy.all import IP, UDP, CookedLinux, CookedLinuxV2, Dot1Q, Ether, IPv6
    src, dst = (CLIENT, SERVER) if client else (SERVER, CLIENT)
    raw = bytes(p[IP])
    hw = bytes.fromhex(src.replace(":", "")) + b"\0\0"
    if kind == "macs":
        return Ether(src=src, dst=dst) / IP(raw)
    if kind == "vlan":
        return Ether(src=src, dst=dst) / Dot1Q(vlan=100, prio=5) / IP(raw)
    if kind == "sll":
        return CookedLinux(pkttype=0 if client else 4, lladdrtype=1, lladdrlen=6, src=hw, proto=0x0800) / IP(raw)
    if kind == "sll2":
        return CookedLinuxV2(proto=0x0800, ifindex=2, lladdrtype=1, pkttype=0 if client else 4, lladdrlen=6,
                             src=hw) / IP(raw)
    v4 = IP(raw)
    l4 = v4.payload.copy()
    if hasattr(l4, "chksum"):
        del l4.chksum
    if isinstance(l4, UDP):
        del l4.len
    ends = ("fd00::a", "fd00::b") if client else ("fd00::b", "fd00::a")
    return Ether(src=src, dst=dst) / IPv6(src=ends[0], dst=ends[1], nh=v4.proto) / l4


def _write(name: str, pkts) -> Path:
    from scapy.all import wrpcap
    TMP.mkdir(exist_ok=True)
    path = TMP / name
    wrpcap(str(path), pkts)
    return path


@pytest.fixture(scope="module")
def rehearsed() -> list[Path]:
    from scapy.all import IP, rdpcap
    paths = []
    for session in SESSIONS:
        pkts = rdpcap(str(CAPTURES_DIR / session))
        first = (pkts[0][IP].src, pkts[0][IP].payload.sport)
        for kind in KINDS:
            out = []
            for p in pkts:
                q = _variant(kind, p, (p[IP].src, p[IP].payload.sport) == first)
                q.time = p.time
                out.append(q)
            paths.append(_write(f"rehearsal-{kind}-{session}", out))
    return paths


@pytest.mark.parametrize("args", [("-T", "json"), ("-V",), (), ("-q", "-z", "expert")],
                         ids=["json", "V", "summary", "expert"])
def test_sessions_on_other_links_and_ipv6(rehearsed, args, protodump_run, standard_run):
    for path in rehearsed:
        same_as_tshark(path, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def bundled_sctp() -> Path:
    """rutentoy-sctp with a SACK bundled before the DATA of two packets and after it in a third: SCTP's Info
    around the game's, the chunk after DATA in a continuation item, the SACK's TSN relative to the peer's first
    DATA chunk (0 before any)."""
    from scapy.all import IP, Ether, Raw, rdpcap
    from scapy.layers.sctp import SCTP, SCTPChunkSACK
    out = []
    for i, p in enumerate(rdpcap(str(CAPTURES_DIR / "rutentoy-sctp.pcap")), 1):
        if i in (6, 8, 13):
            chunks, sack = bytes(p[SCTP].payload), bytes(SCTPChunkSACK(cumul_tsn_ack=p[SCTP].tag, a_rwnd=65536))
            q = p.copy()
            q[SCTP].remove_payload()
            q = q / Raw(chunks + sack if i == 13 else sack + chunks)
            del q[IP].len, q[IP].chksum
            q = Ether(bytes(q))
        else:
            q = p
        q.time = p.time
        out.append(q)
    return _write("rehearsal-sctp-sack.pcap", out)


@pytest.mark.parametrize("args", [("-T", "json"), ("-V",), ()], ids=["json", "V", "summary"])
def test_sctp_sack_bundled_with_data(bundled_sctp, args, protodump_run, standard_run):
    same_as_tshark(bundled_sctp, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def lost_fragment() -> Path:
    """blank datagrams over 200 bytes cut into 128-byte IPv4 fragments, the last one of each lost: no datagram
    completes, and each fragment's bytes show as data ("Fragmented IP protocol ..."; tests/test_ip_fragments.py
    has the ones that complete). Their identifications are small, as a fresh host's: the Info column writes them
    with four hex digits (ID=004d)."""
    from scapy.all import IP, Ether, fragment, rdpcap
    out = []
    for i, p in enumerate(rdpcap(str(CAPTURES_DIR / "blank-server-session.pcap"))[:40]):
        ip = IP(bytes(p[IP]))
        ip.id = 7 * i
        for q in (fragment(ip, fragsize=128)[:-1] if len(ip) > 200 else [ip]):
            q = Ether(src=CLIENT, dst=SERVER) / q
            q.time = p.time
            out.append(q)
    return _write("rehearsal-fragments.pcap", out)


@pytest.mark.parametrize("args", [("-T", "json"), ("-V",), (), ("-q", "-z", "expert")],
                         ids=["json", "V", "summary", "expert"])
def test_fragments_of_game_datagrams(lost_fragment, args, protodump_run, standard_run):
    same_as_tshark(lost_fragment, args, protodump_run, standard_run)


@pytest.fixture(scope="module")
def text_messages() -> Path:
    """freeblox-plain's handshake, then a masked client text message and an unmasked server one that no
    dissector takes (tools/pcap_edit.py with_tcp_payload): tshark's websocket hands each to data-text-lines."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("pcap_edit", CAPTURES_DIR.parent / "tools" / "pcap_edit.py")
    edit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(edit)
    source = CAPTURES_DIR / "freeblox-plain.pcap"
    header, records = edit.read_pcap(source)
    segments = {n: (ends, seq) for n, ends, seq, _ in edit.tcp_segments(source)}
    key = b"\x11\x22\x33\x44"
    client = "hello\nworld\n\ttab \\ back\n".encode()
    masked = bytes([0x81, 0x80 | len(client)]) + key + bytes(b ^ key[i % 4] for i, b in enumerate(client))
    server_text = b"line one\r\nline two"
    server = next(n for n in range(9, 20) if n in segments and segments[n][0][1] == 8765)
    out = records[:7] + [edit.with_tcp_payload(records[7], segments[8][1], masked),
                         edit.with_tcp_payload(records[server - 1], segments[server][1],
                                               bytes([0x81, len(server_text)]) + server_text)]
    TMP.mkdir(exist_ok=True)
    path = TMP / "rehearsal-ws-text.pcap"
    edit.write_pcap(path, header, out)
    return path


@pytest.mark.parametrize("args", [("-T", "json"), ("-T", "json", "-x"), ("-V",), (), ("-T", "ek")],
                         ids=["json", "json-x", "V", "summary", "ek"])
def test_websocket_text_nobody_takes(text_messages, args, protodump_run, standard_run):
    same_as_tshark(text_messages, args, protodump_run, standard_run)
