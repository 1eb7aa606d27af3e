"""tshark -2 shows in earlier frames what only later frames say, in its own (standard) layers: TCP's "[Reassembled
PDU in frame: N]" (tcp.reassembled_in) on each segment of a PDU a later frame completes (also on one that completes
a PDU and starts the next), HTTP's "[Response in
frame: N]" (http.response_in) in the upgrade request, MPTCP's analysis as the first pass left it (on the SYN too,
every subflow listed from the first frame; a joined subflow's relative DSNs count from the other direction's base
on that pass), SCTP's fragment items over the reassembled message (PDML and -x show its bytes), and heuristic lists
in the order the first pass left them (one wslua fake item fewer). The whole output of protodump -2 equals tshark
-2 + plugin's in -V, -T json and -T pdml."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from conftest import ROOT, tshark_available

pytestmark = pytest.mark.skipif(not tshark_available(), reason="tshark is not on PATH")

TMP = Path(__file__).resolve().parent / "tmp"
# capture -> what tshark's second pass adds there (so a comparison cannot pass with the item missing on both sides)
LATER = {"freeblox-plain.pcap": "[Reassembled PDU in frame: 93]",
         # frame 131 completes one PDU and starts the next, which frame 132 completes: named there too
         "freeblox-slow-reader.pcap": "[Reassembled PDU in frame: 132]",
         "freeblox-fragments-plain.pcap": "[Response in frame: 6]",
         "rutentoy-mptcp.pcap": "[MPTCP analysis]", "rutentoy-sctp.pcap": "Frame: 10, payload: 0-599"}
FORMS = [("-V",), ("-T", "json"), ("-T", "pdml"), ("-T", "json", "-x")]


def same(form: tuple, ours: str, theirs: str) -> None:
    if form == ("-T", "pdml"):
        header = r'creator="[^"]*" time="[^"]*" capture_file="[^"]*"'
        ours, theirs = re.sub(header, "", ours), re.sub(header, "", theirs)
    assert ours == theirs


@pytest.mark.parametrize("form", FORMS, ids=" ".join)
@pytest.mark.parametrize("name", sorted(LATER))
def test_second_pass_as_tshark(name, form, protodump_run, standard_run):
    theirs = standard_run("-2", *form, "-r", name)
    assert theirs.returncode == 0
    one = standard_run(*form, "-r", name).stdout
    assert theirs.stdout != one             # the second pass does add something here
    if form == ("-V",):
        assert LATER[name] in theirs.stdout
    ours = protodump_run("-2", *form, "-r", name)
    assert ours.returncode == 0
    same(form, ours.stdout, theirs.stdout)


def test_second_pass_keeps_the_heuristic_order(standard_run, protodump_run):
    """Frame 1's blank payload was offered to the plugin's other heuristic first on the first pass (a fake item
    each); the winner moved to the front, so on the second pass blank is asked first."""
    def fakes(text: str) -> int:
        return text.split('"_source"')[1].count("_ws.lua.fake")
    one = standard_run("-T", "json", "-r", "blank-port-23456.pcap").stdout
    two = standard_run("-2", "-T", "json", "-r", "blank-port-23456.pcap").stdout
    assert fakes(two) == fakes(one) - 1
    assert protodump_run("-2", "-T", "json", "-r", "blank-port-23456.pcap").stdout == two


def _rewritten(name: str, ports: dict, swap_addresses: bool) -> Path:
    """The real MPTCP capture with TCP ports renamed and 127.0.0.1 / 127.0.0.2 swapped (tshark checks no checksum
    or HMAC): the master's client then has the lower port, or the joined subflow's client the higher address."""
    src = (ROOT / "captures" / "rutentoy-mptcp.pcap").read_bytes()
    out, p = bytearray(src[:24]), 24
    swap = {b"\x7f\0\0\x01": b"\x7f\0\0\x02", b"\x7f\0\0\x02": b"\x7f\0\0\x01"}
    while p < len(src):
        caplen = struct.unpack_from("<I", src, p + 8)[0]
        rec = bytearray(src[p + 16:p + 16 + caplen])
        if swap_addresses:
            for o in (26, 30):
                rec[o:o + 4] = swap.get(bytes(rec[o:o + 4]), bytes(rec[o:o + 4]))
        t = 14 + (rec[14] & 15) * 4
        if rec[23] == 6:
            for o in (t, t + 2):
                port = struct.unpack_from("!H", rec, o)[0]
                struct.pack_into("!H", rec, o, ports.get(port, port))
        out += src[p:p + 16] + rec
        p += 16 + caplen
    TMP.mkdir(exist_ok=True)
    path = TMP / name
    path.write_bytes(bytes(out))
    return path


@pytest.mark.parametrize("ports, swap_addresses", [({40011: 20011}, False), ({}, True), ({40011: 20011}, True)],
                         ids=["master-client-lower-port", "subflow-client-higher-address", "both"])
def test_joined_subflow_dsn_on_the_second_pass(ports, swap_addresses, protodump_run, standard_run):
    path = str(_rewritten(f"mptcp-2-{len(ports)}-{int(swap_addresses)}.pcap", ports, swap_addresses))
    theirs = standard_run("-2", "-T", "json", "-r", path)
    assert '"mptcp.ack": "18446744073427056400"' in theirs.stdout    # the subflow's other base (frame 9)
    assert protodump_run("-2", "-T", "json", "-r", path).stdout == theirs.stdout
