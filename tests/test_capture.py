"""protodump.capture: capture files in, link/network/transport decode out, checked against tshark's own reading.

The real capture is converted with tshark's tools (editcap, mergecap, gzip); link types tshark cannot convert to
are built here from the real IP packets, and tshark reads those synthetic files too, so every expectation is
tshark's, not ours.
"""
from __future__ import annotations

import gzip
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import dpkt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protodump.capture import CaptureError, RawFrame, decode, open_capture
from protodump.capture.link import LINK_DECODERS
from protodump.engine.tree import ERROR, MALFORMED, PROTOCOL

CAPTURES = Path("/work/shared/captures")
BLANK = CAPTURES / "blank-server-session.pcap"
TCP_CAPTURE = CAPTURES / "iceball-tcp-session.pcap"

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None or not BLANK.exists(),
                                  reason="tshark and the recorded captures are needed")
pytestmark = needs_tshark

FIELDS = ["frame.number", "frame.time_epoch", "frame.len", "frame.cap_len", "frame.protocols", "frame.encap_type",
          "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "udp.srcport", "udp.dstport", "udp.length"]


def tshark_fields(path: Path, fields: list[str]) -> list[list[str]]:
    args = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "occurrence=f"]
    for name in fields:
        args += ["-e", name]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def epoch(ts_ns: int) -> str:
    return f"{ts_ns // 1_000_000_000}.{ts_ns % 1_000_000_000:09d}"


def ours(path: Path) -> list[list[str]]:
    """Our reading of a file, as the FIELDS row tshark prints."""
    rows = []
    for fr in open_capture(path):
        d = decode(fr)
        v4, v6 = d.network == "ip", d.network == "ipv6"
        rows.append([str(fr.number), epoch(fr.ts_ns), str(fr.length), str(fr.caplen), ":".join(d.protocols),
                     str(fr.linktype), d.src if v4 else "", d.dst if v4 else "", d.src if v6 else "",
                     d.dst if v6 else "", str(d.sport), str(d.dport), str(len(d.payload) + 8)])
    return rows


def assert_same_as_tshark(path: Path, encap: str | None = None) -> int:
    theirs = tshark_fields(path, FIELDS)
    mine = ours(path)
    assert len(mine) == len(theirs) > 0
    for m, t in zip(mine, theirs, strict=True):
        # tshark appends the payload's dissector ("data"); our list stops at the transport by design.
        assert t[4] == m[4] or t[4].startswith(m[4] + ":"), (m, t)
        if encap is not None:
            assert t[5] == encap
        m[4], t[4], m[5], t[5] = "", "", "", ""   # encap: tshark numbers WTAP encapsulations, not LINKTYPEs
        if t[1] == "" and m[1] == "0.000000000":   # a pcapng simple packet block has no timestamp
            m[1] = ""
        assert m == t
    return len(mine)


def records(path: Path) -> list[int]:
    """Byte offsets of every record of a (micro/nano) pcap file."""
    data = path.read_bytes()
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    offs, off = [], 24
    while off < len(data):
        offs.append(off)
        off += 16 + struct.unpack_from(order + "I", data, off + 8)[0]
    return offs


def blocks(path: Path) -> list[tuple[int, int]]:
    """(offset, type) of every block of a little-endian pcapng file."""
    data = path.read_bytes()
    out, off = [], 0
    while off < len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        out.append((off, btype))
        off += blen
    return out


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("capture")


@pytest.fixture(scope="session")
def frames() -> list[RawFrame]:
    return list(open_capture(BLANK))


# -- files: every format reads like tshark reads it --------------------------------------------------------

def test_real_capture_matches_tshark():
    assert assert_same_as_tshark(BLANK, encap="1") == 1342


@pytest.mark.parametrize("fmt", ["pcapng", "nsecpcap", "pcap"])
@pytest.mark.parametrize("compress", [False, True])
def test_editcap_formats_and_gzip(work, fmt, compress):
    out = work / f"blank.{fmt}"
    subprocess.run(["editcap", "-F", fmt, str(BLANK), str(out)], check=True, capture_output=True)
    if compress:
        gz = work / f"blank-{fmt}.data"           # no .gz suffix: detection is by magic
        gz.write_bytes(gzip.compress(out.read_bytes()))
        out = gz
    assert assert_same_as_tshark(out) == 1342
    with open_capture(out) as cap:
        assert cap.format == ("pcapng" if fmt == "pcapng" else "pcap") and cap.compressed == compress


def _write_pcap(path: Path, frames, linktype: int, order: str = "<", nano: bool = False, snaplen=65535):
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    with open(path, "wb") as f:
        f.write(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
        for fr in frames:
            sec, ns = divmod(fr.ts_ns, 1_000_000_000)
            f.write(struct.pack(order + "IIII", sec, ns if nano else ns // 1000, len(fr.data), fr.length))
            f.write(fr.data)


@pytest.mark.parametrize("order,nano", [(">", False), (">", True), ("<", True)])
def test_pcap_byte_orders_and_resolutions(work, frames, order, nano):
    path = work / f"bo{order == '>'}{nano}.pcap"
    _write_pcap(path, frames, 1, order, nano)
    assert assert_same_as_tshark(path) == 1342
    assert [f.ts_ns for f in open_capture(path)] == [f.ts_ns for f in frames]


def test_mergecap_pcapng_two_interfaces(work, frames):
    """mergecap keeps one IDB per input: Ethernet at microseconds plus raw IPv4 at nanoseconds."""
    raw = work / "raw4-nsec.pcap"
    _write_pcap(raw, [RawFrame(f.number, f.ts_ns + 123, 0, f.length - 14, 228, 0, f.data[14:])
                      for f in frames[:200]], 228, nano=True)
    merged = work / "merged.pcapng"
    subprocess.run(["mergecap", "-F", "pcapng", "-w", str(merged), str(BLANK), str(raw)], check=True,
                   capture_output=True)
    assert assert_same_as_tshark(merged) == 1542
    got = list(open_capture(merged))
    theirs = tshark_fields(merged, ["frame.interface_id"])
    assert [str(f.interface) for f in got] == [t[0] for t in theirs]
    assert {(f.interface, f.linktype) for f in got} == {(0, 1), (1, 228)}
    assert any(f.ts_ns % 1000 == 123 for f in got)   # the nanosecond interface kept its resolution


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _opt(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def test_pcapng_spb_tsresol_unknown_blocks(work, frames):
    a, b = frames[0], frames[1]
    shb = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    idb0 = _block(1, struct.pack("<HHI", 1, 0, 0) + _opt(9, b"\x09") + _opt(0, b""))          # ns
    idb1 = _block(1, struct.pack("<HHI", 228, 0, 0) + _opt(9, b"\x83") + _opt(14, struct.pack("<q", 10))
                  + _opt(0, b""))                                                               # 2^-3 s, +10 s
    epb0 = _block(6, struct.pack("<IIIII", 0, a.ts_ns >> 32, a.ts_ns & 0xFFFFFFFF, a.caplen, a.length) + a.data)
    epb1 = _block(6, struct.pack("<IIIII", 1, 0, 12, b.caplen - 14, b.length - 14) + b.data[14:])
    spb = _block(3, struct.pack("<I", b.length) + b.data)
    unknown = _block(0x00000042, b"ignore me")                              # an unknown block type
    isb = _block(5, struct.pack("<III", 0, 0, 0))                            # interface statistics
    path = work / "handmade.pcapng"
    path.write_bytes(shb + idb0 + unknown + idb1 + epb0 + isb + spb + epb1)
    got = list(open_capture(path))
    assert [(f.number, f.interface, f.linktype) for f in got] == [(1, 0, 1), (2, 0, 1), (3, 1, 228)]
    assert got[0].ts_ns == a.ts_ns and got[0].data == a.data
    assert got[1].data == b.data and got[1].caplen == b.caplen and got[1].length == b.length
    assert got[2].ts_ns == 11_500_000_000         # 12 ticks of 1/8 s, plus the 10 s if_tsoffset
    assert assert_same_as_tshark(path) == 3        # (an SPB has no time: tshark prints none, we say 0)


# -- errors: not a capture, truncated, corrupt --------------------------------------------------------------

def test_not_a_capture(work):
    text = work / "notes.txt"
    text.write_bytes(b"hello, this is not a capture\n")
    with pytest.raises(CaptureError, match=r"not a pcap or pcapng file \(magic 0x68656c6c\)") as e:
        open_capture(text)
    assert e.value.offset == 0
    gz = work / "notes.bin"
    gz.write_bytes(gzip.compress(text.read_bytes()))
    with pytest.raises(CaptureError, match="magic 0x68656c6c.*uncompressed stream"):
        open_capture(gz)
    empty = work / "empty"
    empty.write_bytes(b"")
    with pytest.raises(CaptureError, match="not a pcap or pcapng file"):
        open_capture(empty)


def read_until_error(path: Path) -> tuple[list[RawFrame], CaptureError | None]:
    got = []
    try:
        for fr in open_capture(path):
            got.append(fr)
    except CaptureError as e:
        return got, e
    return got, None


def test_dpkt_hides_truncation(work):
    """Why files.py has its own record loop: dpkt yields a short last packet without a word."""
    offs = records(BLANK)
    cut = work / "dpkt-cut.pcap"
    cut.write_bytes(BLANK.read_bytes()[:offs[10] + 16 + 5])
    with open(cut, "rb") as f:
        pkts = list(dpkt.pcap.Reader(f))
    assert len(pkts) == 11 and len(pkts[-1][1]) == 5


def test_truncated_pcap(work, frames):
    data = BLANK.read_bytes()
    offs = records(BLANK)
    cut = work / "cut.pcap"
    cut.write_bytes(data[:10])
    with pytest.raises(CaptureError, match="truncated pcap file header") as e:
        open_capture(cut)
    assert e.value.offset == 0
    for k in (0, 1, 100, 700, 1341):
        for extra, what in ((3, "record header"), (16 + 2, "record for frame")):
            cut.write_bytes(data[:offs[k] + extra])
            got, err = read_until_error(cut)
            assert [f.data for f in got] == [f.data for f in frames[:k]]
            assert err is not None and err.offset == offs[k] and what in err.message
            assert f"frame {k + 1}" in err.message and f"offset {offs[k]})" in str(err)
        cut.write_bytes(data[:offs[k]])                  # a cut between records is a clean end
        got, err = read_until_error(cut)
        assert len(got) == k and err is None


def test_corrupt_pcap_record_length(work, frames):
    data = bytearray(BLANK.read_bytes())
    off = records(BLANK)[49]
    struct.pack_into("<I", data, off + 8, 0x7FFFFFFF)
    bad = work / "corrupt.pcap"
    bad.write_bytes(bytes(data))
    got, err = read_until_error(bad)
    assert len(got) == 49 and err.offset == off and "exceeds the maximum" in err.message


def test_truncated_and_corrupt_pcapng(work, frames):
    ng = work / "cut-src.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(BLANK), str(ng)], check=True, capture_output=True)
    data = ng.read_bytes()
    epbs = [off for off, t in blocks(ng) if t == 6]
    cut = work / "cut.pcapng"
    for k in (0, 500, 1341):
        for extra in (4, 8 + 20, 40):
            cut.write_bytes(data[:epbs[k] + extra])
            got, err = read_until_error(cut)
            assert len(got) == k and err is not None and err.offset == epbs[k], (k, extra, err)
            assert "truncated pcapng block" in err.message
    # a block whose trailing length disagrees with its leading one
    bad = bytearray(data)
    blen = struct.unpack_from("<I", bad, epbs[7] + 4)[0]
    struct.pack_into("<I", bad, epbs[7] + blen - 4, blen + 4)
    cut.write_bytes(bytes(bad))
    got, err = read_until_error(cut)
    assert len(got) == 7 and err.offset == epbs[7] and "trailing length" in err.message


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_truncated_gzip_reports_uncompressed_offset(work, frames, fmt):
    plain = work / f"gzsrc.{fmt}"
    subprocess.run(["editcap", "-F", fmt, str(BLANK), str(plain)], check=True, capture_output=True)
    starts = records(plain) if fmt == "pcap" else [off for off, t in blocks(plain) if t == 6]
    packed = gzip.compress(plain.read_bytes())
    cut = work / f"cut-{fmt}.gz"
    for frac in (0.1, 0.5, 0.97):
        cut.write_bytes(packed[:int(len(packed) * frac)])
        got, err = read_until_error(cut)
        k = len(got)
        assert 0 < k < 1342 and [f.data for f in got] == [f.data for f in frames[:k]]
        assert err.compressed and err.offset == starts[k] and "uncompressed stream" in str(err)
        assert "gzip stream ends early" in err.message


# -- decode: compare with tshark on synthetic link types ----------------------------------------------------

def _ipv6_from(ip4: bytes, ext: bytes = b"", first_nh: int = 17) -> bytes:
    """The same UDP datagram over IPv6 (::1 -> ::1), optionally behind extension headers."""
    hl = (ip4[0] & 15) * 4
    tlen = struct.unpack_from("!H", ip4, 2)[0]
    l4 = ip4[hl:tlen]
    return (struct.pack("!IHBB", 6 << 28, len(ext) + len(l4), first_nh if ext else 17, 64)
            + bytes(15) + b"\1" + bytes(15) + b"\1" + ext + l4)


EXT = (bytes([60, 0, 1, 4, 0, 0, 0, 0]) + bytes([44, 0, 1, 4, 0, 0, 0, 0])   # hop-by-hop, dest options
       + bytes([17, 0, 0, 0, 0, 0, 0, 7]))                                      # atomic fragment header

WRAP = {
    "sll": (113, lambda ip, v: struct.pack("!HHH8sH", 0, 772, 6, bytes(8), 0x86DD if v == 6 else 0x0800) + ip),
    "sll2": (276, lambda ip, v: struct.pack("!HHIHBB8s", 0x86DD if v == 6 else 0x0800, 0, 1, 772, 0, 6,
                                            bytes(8)) + ip),
    "null": (0, lambda ip, v: struct.pack("<I", 30 if v == 6 else 2) + ip),
    "loop": (108, lambda ip, v: struct.pack(">I", 24 if v == 6 else 2) + ip),
    "raw": (101, lambda ip, v: ip),
    "raw4": (228, lambda ip, v: ip),
    "raw6": (229, lambda ip, v: ip),
    "vlan": (1, lambda ip, v: bytes(12) + struct.pack("!HHHH", 0x8100, 0x2005, 0x88A8, 7)
             + struct.pack("!H", 0x86DD if v == 6 else 0x0800) + ip),
}


@pytest.mark.parametrize("name,version", [(n, v) for n in sorted(WRAP) for v in (4, 6, "6ext")
                                          if not (n == "raw4" and v != 4) and not (n == "raw6" and v == 4)])
def test_synthetic_link_types_match_tshark(work, frames, name, version):
    linktype, wrap = WRAP[name]
    made = []
    for fr in frames[:300]:
        ip = fr.data[14:]
        if version == 6:
            ip = _ipv6_from(ip)
        elif version == "6ext":
            ip = _ipv6_from(ip, EXT, 0)
        pkt = wrap(ip, 4 if version == 4 else 6)
        made.append(RawFrame(fr.number, fr.ts_ns, len(pkt), len(pkt), linktype, 0, pkt))
    path = work / f"syn-{name}-{version}.pcap"
    _write_pcap(path, made, linktype)
    assert assert_same_as_tshark(path) == 300


def test_tcp_matches_tshark():
    fields = ["tcp.srcport", "tcp.dstport", "tcp.seq_raw", "tcp.ack_raw", "tcp.flags", "tcp.len",
              "tcp.window_size_value"]
    theirs = tshark_fields(TCP_CAPTURE, fields)
    mine = []
    for fr in open_capture(TCP_CAPTURE):
        d = decode(fr)
        assert d.transport == "tcp"
        mine.append([str(d.sport), str(d.dport), str(d.seq), str(d.ack), f"0x{d.flags:04x}", str(len(d.payload)),
                     str(d.window)])
    assert mine == theirs


def _pdml(path: Path, count: int):
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-c", str(count), "-T", "pdml"], capture_output=True,
                         check=True).stdout
    return ET.fromstring(out).findall("packet")


@pytest.mark.parametrize("path,count", [(BLANK, 3), (TCP_CAPTURE, 6)])
def test_tree_fields_positions_match_tshark_pdml(path, count):
    """Every field our standard layers emit that tshark also has: same byte position, size and value."""
    packets = _pdml(path, count)
    compared = 0
    for fr, pkt in zip(list(open_capture(path))[:count], packets, strict=True):
        theirs: dict[str, list] = {}                 # each name's occurrences, matched in order
        for node in pkt.iter("field"):
            theirs.setdefault(node.get("name"), []).append(node)
        layers = decode(fr).layers()
        assert [layer.proto for layer in layers] == [p.get("name") for p in pkt.findall("proto")
                                                     if p.get("name") in ("frame", "eth", "ip", "udp", "tcp")]
        for layer in layers:
            for item in layer.item.walk():
                if item.field is None or not theirs.get(item.field.abbrev) or item.generated:
                    continue
                t = theirs[item.field.abbrev].pop(0)
                if layer.proto != "frame":
                    assert (item.offset, item.length) == (int(t.get("pos")), int(t.get("size"))), item.field.abbrev
                if isinstance(item.value, (bool, int)) and t.get("show", "").lstrip("-").isdigit():
                    assert int(item.value) == int(t.get("show")), item.field.abbrev
                    compared += 1
                elif isinstance(item.value, str) and item.field.abbrev != "frame.protocols":
                    assert item.value == t.get("show"), item.field.abbrev
                    compared += 1
    assert compared > 20 * count


# -- decode: bad input ---------------------------------------------------------------------------------------

def _frame(data: bytes, linktype: int = 1, length: int | None = None) -> RawFrame:
    return RawFrame(1, 0, len(data), len(data) if length is None else length, linktype, 0, data)


def _malformed(d, proto: str) -> list[str]:
    layer = next(layer for layer in d.layers() if layer.proto == proto)
    infos = [i.expert_info for i in layer.item.walk() if i.expert_info is not None]
    # errors; tshark files bogus IP/TCP header values under Protocol, the rest under Malformed
    assert all(i.group in (MALFORMED, PROTOCOL) and i.severity == ERROR for i in infos)
    return [i.abbrev + ": " + i.message for i in infos]


def test_fast_path_equals_general_path(frames):
    from protodump.capture.decode import Decoded
    slots = [s for s in Decoded.__slots__ if s != "_layers"]
    for fr in frames:
        fast = decode(fr)
        slow = Decoded(fr)
        LINK_DECODERS[1](slow, fr.data)
        assert [getattr(fast, s) for s in slots] == [getattr(slow, s) for s in slots]


BUNDLED = Path(__file__).resolve().parents[1] / "captures"


@pytest.mark.parametrize("name", ["iceball-tcp-session.pcap", "rutentoy-segmentation.pcap", "freeblox-session.pcap",
                                  "rutentoy-lost-reordered.pcap", "websocket-bad.pcap", "iceball-tcp-bad.pcap"])
def test_tcp_fast_path_equals_general_path(name, monkeypatch):
    """decode's Ethernet/IPv4/TCP fast path fills every slot as the general decoders do (and is taken)."""
    import importlib
    decode_module = importlib.import_module("protodump.capture.decode")     # (the package exports the function)
    slots = [s for s in decode_module.Decoded.__slots__ if s != "_layers"]
    taken = []
    fast_path = decode_module._tcp_fast
    monkeypatch.setattr(decode_module, "_tcp_fast", lambda *a: taken.append(fast_path(*a)) or taken[-1])
    for fr in open_capture(BUNDLED / name):
        fast = decode(fr)
        slow = decode_module.Decoded(fr)
        LINK_DECODERS[1](slow, fr.data)
        assert [getattr(fast, s) for s in slots] == [getattr(slow, s) for s in slots], fr.number
    assert sum(d is not None for d in taken) > 20


def test_malformed_headers(frames):
    good = frames[0].data                   # Ethernet / IPv4 / UDP, 48 bytes of payload
    d = decode(_frame(good[:30]))           # IPv4 header cut, and the wire length agrees: malformed
    assert d.network == "ip" and d.transport is None and d.src is None
    assert any("_ws.malformed" in m for m in _malformed(d, "ip"))
    d = decode(_frame(good[:30], length=len(good)))      # cut by the snaplen only: no expert, tshark's note
    assert not d.problems and d.spans[-1] == ("ip", 14, 16, "cut") and d.src == "127.0.0.1" and d.dst is None
    assert d.layers()[-1].proto == "_ws.short" and d.plain_info() == "[Packet size limited during capture]"
    bad_ihl = good[:14] + b"\x43" + good[15:]
    d = decode(_frame(bad_ihl))
    # tshark: a PI_PROTOCOL error on ip.hdr_len, and the Info is its message; no addresses
    assert d.transport is None and d.src is None and d.plain_info() == "Bogus IP header length (12, must be at least 20)"
    assert _malformed(d, "ip")
    long_udp = good[:38] + struct.pack("!H", 500) + good[40:]
    d = decode(_frame(long_udp))
    assert d.transport == "udp" and len(d.payload) == 48 and "udp.length.bad" in _malformed(d, "udp")[0]
    long_ip = good[:16] + struct.pack("!H", 1000) + good[18:]
    d = decode(_frame(long_ip))
    assert "ip.len.past_end" in _malformed(d, "ip")[0] and d.transport == "udp"
    frag = good[:20] + struct.pack("!H", 0x2000 | 10) + good[22:]
    d = decode(_frame(frag))
    assert d.fragment and d.transport is None and d.payload_offset == 34
    raw = bytes(12) + b"\x08\x00" + TCP_IP
    bad_off = raw[:46] + bytes([0x30 | (raw[46] & 15)]) + raw[47:]
    d = decode(_frame(bad_off))
    assert d.transport == "tcp" and d.payload == b"" and "tcp.bogus_header_length" in _malformed(d, "tcp")[0]


def test_unknown_link_type(frames):
    d = decode(_frame(frames[0].data, linktype=147))
    assert d.error == "unknown link type 147" and d.network is None and d.transport is None
    assert [layer.proto for layer in d.layers()] == ["frame"]


def test_summary_path_builds_no_tree(frames):
    d = decode(frames[0])
    assert d._layers is None
    assert d.layers() is d.layers()


LINKTYPES = sorted(LINK_DECODERS) + [147]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(linktype=st.sampled_from(LINKTYPES), data=st.binary(max_size=120), extra=st.integers(-20, 64))
def test_random_bytes_never_raise(linktype, data, extra):
    d = decode(RawFrame(1, 0, len(data), max(0, len(data) + extra), linktype, 0, data))
    d.layers()
    assert d.payload_offset + len(d.payload) <= len(data)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(linktype=st.sampled_from(sorted(WRAP)), version=st.sampled_from([4, 6, "6ext"]), tcp=st.booleans(),
       edits=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=6),
       cut=st.integers(0, 200))
def test_mutated_frames_never_raise(linktype, version, tcp, edits, cut):
    """Random bytes rarely get past the link layer; mutating real frames reaches IP, UDP and TCP."""
    ip = (TCP_IP if tcp else UDP_IP)
    if version != 4:
        ip = _ipv6_from(ip, EXT if version == "6ext" else b"", 0)
        if tcp:
            ip = ip[:6] + (b"\x06" if version == 6 else b"\x00") + ip[7:]
    lt, wrap = WRAP[linktype]
    pkt = bytearray(wrap(ip, 4 if version == 4 else 6))
    for pos, val in edits:
        if pos < len(pkt):
            pkt[pos] = val
    pkt = bytes(pkt[:cut])
    d = decode(RawFrame(1, 0, len(pkt), len(pkt), lt, 0, pkt))
    d.layers()


def _first_ip(path: Path) -> bytes:
    if not path.exists():
        return b""
    with open_capture(path) as cap:
        return next(cap).data[14:]


UDP_IP = _first_ip(BLANK)
TCP_IP = _first_ip(TCP_CAPTURE)


def _built_in_manuf_tshark(tmp_path: Path) -> Path | None:
    """A directory whose `tshark` has no manuf file (Wireshark >= 4.2): the system's, or the other Debian root's
    through a chroot wrapper (as root)."""
    import os
    from conftest import OTHER_ROOT
    if shutil.which("tshark") and not Path("/usr/share/wireshark/manuf").is_file():
        return Path(shutil.which("tshark")).parent
    if (OTHER_ROOT / "usr/bin/tshark").exists() and not (OTHER_ROOT / "usr/share/wireshark/manuf").is_file() \
            and os.geteuid() == 0:
        wrapper = tmp_path / "bin" / "tshark"
        wrapper.parent.mkdir()
        wrapper.write_text(f"#!/bin/sh\nexec {shutil.which('chroot')} {OTHER_ROOT} tshark \"$@\"\n")
        wrapper.chmod(0o755)
        return wrapper.parent
    return None


def test_manuf_without_a_file_comes_from_tshark(tmp_path, monkeypatch):
    """Wireshark >= 4.2 ships no manuf file: the vendor names come from `tshark -G manuf` (its built-in table),
    read once into the cache; the next run reads the cache, not tshark."""
    from protodump.capture import manuf
    where = _built_in_manuf_tshark(tmp_path)
    if where is None:
        pytest.skip("no Wireshark >= 4.2 here")
    monkeypatch.setenv("PATH", f"{where}:/usr/bin:/bin")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(manuf, "_file", lambda name: None)
    for cached in (manuf.tables, manuf.eth_name):
        cached.cache_clear()
    try:
        assert manuf.eth_name(bytes(6)) == "00:00:00_00:00:00"
        assert manuf.oui_name(bytes.fromhex("001d7e000000")) == "Cisco-Linksys, LLC"
        assert manuf.eth_name(bytes.fromhex("001bc5000012")).endswith("_12")        # a /36 block
        cache = list((tmp_path / "cache" / "protodump").glob("manuf-*.txt"))
        assert len(cache) == 1 and "Cisco-Linksys" in cache[0].read_text()
        def no_tshark(*_a, **_k):
            raise AssertionError("tshark run again")
        monkeypatch.setattr(subprocess, "run", no_tshark)       # the second time, the cache answers
        assert "Cisco-Linksys" in manuf._built_in_manuf()
    finally:
        for cached in (manuf.tables, manuf.eth_name):
            cached.cache_clear()
