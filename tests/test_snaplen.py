"""Frames cut by the snap length (editcap -s N of bundled captures, made in tests/tmp) against tshark 4.0 + plugin
(standard_run): inside a TCP or UDP payload (tshark counts the length on the wire: Len=, tcp.len, nxtseq, the
analysis), inside the TCP options (the options as far as captured, "[Packet size limited during capture: TCP
truncated]", no analysis tree or tags; the window scaling unknown after a cut SYN), inside the TCP header (the
fields as far as captured; before the window only the ports, unanalysed) or the UDP header (its ports and
length), inside an MPTCP option."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import CAPTURES_DIR
from test_std_details import same_as_tshark

TMP = Path(__file__).resolve().parent / "tmp"
CUTS = [("rutentoy-messages.pcap", 42), ("rutentoy-messages.pcap", 50), ("rutentoy-messages.pcap", 52),
        ("rutentoy-login-texture.pcap", 60), ("rutentoy-login-texture.pcap", 80),
        ("rutentoy-login-texture.pcap", 100), ("rutentoy-lost-reordered.pcap", 58),
        ("rutentoy-lost-reordered.pcap", 66), ("iceball-tcp-session.pcap", 66), ("iceball-tcp-session.pcap", 80),
        ("rutentoy-mptcp.pcap", 60), ("rutentoy-mptcp.pcap", 76), ("rutentoy-mptcp.pcap", 100),
        ("enet-plain.pcap", 60), ("enet-plain.pcap", 80), ("blank-server-session.pcap", 60),
        ("blank-all-current.pcap", 38), ("blank-all-current.pcap", 40)]


def cut(name: str, snaplen: int) -> Path:
    if shutil.which("editcap") is None:
        pytest.skip("editcap (Wireshark) not installed")
    TMP.mkdir(exist_ok=True)
    out = TMP / f"cut{snaplen}-{name}"
    if not out.exists():
        subprocess.run(["editcap", "-s", str(snaplen), str(CAPTURES_DIR / name), str(out)], check=True)
    return out


@pytest.mark.parametrize("args", [("-V",), ("-T", "json"), (), ("-q", "-z", "expert")], ids=["V", "json", "summary",
                                                                                             "expert"])
@pytest.mark.parametrize("name,snaplen", CUTS, ids=[f"{n}-{s}" for n, s in CUTS])
def test_cut_frames_as_tshark(name, snaplen, args, protodump_run, standard_run):
    same_as_tshark(cut(name, snaplen), args, protodump_run, standard_run)


# Lost and retransmitted segments cut by the snap length: tshark desegments no cut segment (dissect_tcp_payload has
# no can_desegment), so a cut retransmission has no "Retransmitted TCP segment data", and a cut spurious
# retransmission goes to the plugin's dissector (which shows nothing of it, but is in frame.protocols); the options
# and payload items are as long as their captured bytes (proto.c cuts an item to them: PDML size, JSON _raw)
LOSSY_CUTS = [("rutentoy-lossy.pcap", 80), ("rutentoy-lossy.pcap", 96), ("rutentoy-lossy.pcap", 150),
              ("iceball-tcp-lossy.pcap", 80), ("rutentoy-lossy-close.pcap", 80), ("rutentoy-lossy-v6.pcap", 96)]


@pytest.mark.parametrize("args", [("-V",), ("-T", "json", "-x"), ("-T", "ek", "-x"),
                                  ("-T", "fields", "-e", "frame.number", "-e", "frame.protocols")],
                         ids=["V", "json-x", "ek-x", "protocols"])
@pytest.mark.parametrize("name,snaplen", LOSSY_CUTS, ids=[f"{n}-{s}" for n, s in LOSSY_CUTS])
def test_cut_retransmissions_as_tshark(name, snaplen, args, protodump_run, standard_run):
    same_as_tshark(cut(name, snaplen), args, protodump_run, standard_run)


def test_cut_payload_counts_the_wire_length(protodump_run):
    """A Rutentoy login cut at 80 bytes: the segment's 70 bytes, not the 14 captured, in Info and the analysis."""
    out = protodump_run("-T", "fields", "-e", "tcp.len", "-e", "tcp.nxtseq", "-Y", "frame.number == 4",
                        str(cut("rutentoy-login-texture.pcap", 80))).stdout
    assert out.split() == ["70", "71"]


def test_cut_options_say_so(protodump_run):
    out = protodump_run("-c", "1", str(cut("rutentoy-login-texture.pcap", 60))).stdout
    assert out.rstrip().endswith("MSS=1460 SACK_PERM[Packet size limited during capture]")


def _sweep_frames() -> dict[str, tuple[int, list[bytes]]]:
    """Frames to cut at every length (tools/pcap_edit.snap_sweep): name -> (first length, frames). Inside IPv4
    (with options) and IPv6 headers, an 802.1ad + 802.1Q tag pair, IPv6 extension headers (hop-by-hop and
    destination options, a routing header and a fragment header), before the UDP/TCP ports, a UDP payload with no
    byte or 1 to 3 bytes captured (WireGuard's heuristic throws), SCTP's header and chunks (a SACK bundled
    before DATA), TCP over IPv6."""
    from scapy.all import (Dot1AD, Dot1Q, Ether, IP, IPOption_RR, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                           IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, Raw, TCP, UDP)
    from scapy.layers.sctp import SCTP, SCTPChunkData, SCTPChunkSACK
    e = Ether(src="00:11:22:33:44:55", dst="66:77:88:99:aa:bb")
    v4, v6 = IP(src="10.0.0.1", dst="10.0.0.2"), IPv6(src="fe80::1", dst="fe80::2")
    blank = Raw(bytes.fromhex("fb1ab1af") + bytes(30))
    other = UDP(sport=40001, dport=27015) / Raw(b"\xff" * 40)
    return {
        "v4": (14, [e / v4 / UDP(sport=40000, dport=12354) / blank, e / v4 / other,
                    e / IP(src="10.0.0.1", dst="10.0.0.2", options=[IPOption_RR(routers=["1.2.3.4"])]) / other]),
        "v6": (14, [e / v6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / UDP(sport=40000, dport=12354) / blank,
                    e / v6 / IPv6ExtHdrRouting(addresses=["2001:db8::1"]) / IPv6ExtHdrFragment(id=7) / other,
                    e / v6 / IPv6ExtHdrFragment(id=8, m=1) / other,
                    e / v6 / TCP(sport=40002, dport=29778, flags="S", options=[("MSS", 1460), ("WScale", 7)])]),
        "tags": (14, [e / Dot1AD(prio=3, vlan=7) / Dot1Q(prio=2, vlan=9) / v4 / UDP(sport=1, dport=2) / b"y"]),
        "sctp": (34, [e / v4 / SCTP(sport=40003, dport=29778, tag=5) / SCTPChunkSACK(cumul_tsn_ack=3, a_rwnd=1000) /
                      SCTPChunkData(tsn=1, data=b"hello world!", beginning=1, ending=1)]),
    }


@pytest.fixture(scope="module")
def sweeps() -> list[Path]:
    import importlib.util
    spec = importlib.util.spec_from_file_location("pcap_edit", CAPTURES_DIR.parent / "tools" / "pcap_edit.py")
    edit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(edit)
    TMP.mkdir(exist_ok=True)
    paths = []
    for name, (start, frames) in _sweep_frames().items():
        records = edit.snap_sweep([bytes(f) for f in frames], start)
        path = TMP / f"sweep-{name}.pcap"
        edit.write_pcap(path, struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1), records)
        paths.append(path)
    return paths


@pytest.mark.parametrize("args", [("-V",), ("-T", "json"), (), ("-q", "-z", "expert")], ids=["V", "json", "summary",
                                                                                             "expert"])
def test_cut_at_every_length_as_tshark(sweeps, args, protodump_run, standard_run):
    """Every cut of the frames above: the fields tshark read before it ran out of bytes, its
    "[Packet size limited during capture: X truncated]" and Info, the address columns it got to."""
    for path in sweeps:
        same_as_tshark(path, args, protodump_run, standard_run)
