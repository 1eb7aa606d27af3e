"""Frames cut by the snap length (editcap -s N of bundled captures, made in tests/tmp) against tshark 4.0 + plugin
(standard_run): inside a TCP or UDP payload (tshark counts the length on the wire: Len=, tcp.len, nxtseq, the
analysis), inside the TCP options (the options as far as captured, "[Packet size limited during capture: TCP
truncated]", no analysis tree or tags; the window scaling unknown after a cut SYN), inside the TCP header (the
fields as far as captured; before the window only the ports, unanalysed) or the UDP header (its ports and
length), inside an MPTCP option."""
from __future__ import annotations

import shutil
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


def test_cut_payload_counts_the_wire_length(protodump_run):
    """A Rutentoy login cut at 80 bytes: the segment's 70 bytes, not the 14 captured, in Info and the analysis."""
    out = protodump_run("-T", "fields", "-e", "tcp.len", "-e", "tcp.nxtseq", "-Y", "frame.number == 4",
                        str(cut("rutentoy-login-texture.pcap", 80))).stdout
    assert out.split() == ["70", "71"]


def test_cut_options_say_so(protodump_run):
    out = protodump_run("-c", "1", str(cut("rutentoy-login-texture.pcap", 60))).stdout
    assert out.rstrip().endswith("MSS=1460 SACK_PERM[Packet size limited during capture]")
