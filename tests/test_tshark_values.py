"""Check output/tshark_values.py against the real tshark: a Lua plugin and a pcap are generated in a tmp dir, then
the JSON values, the exact text of the layer and the -V labels are compared."""
from __future__ import annotations

import json
import math
import shutil
import struct
import sys
from pathlib import Path

import pytest


from protodump.engine.tree import ERROR, MALFORMED, NOTE, PROTOCOL, WARN, ExpertInfo, FieldInfo  # noqa: E402
from protodump.output import tshark_values as tv  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not on PATH")

PORT = 9999
# 0..31: integers; 32..55: float/double; 56..: a string with quotes, controls and bytes >= 0x80, then a NUL
PAYLOAD = (bytes(range(1, 17)) + bytes(range(0xFF, 0xEF, -1)) + struct.pack(">f", 0.1) + struct.pack("<f", 1 / 3)
           + struct.pack(">d", 0.1) + struct.pack(">d", 1 / 3) + b"a\"b\\c\n\t\x01\x7f/" + "é€".encode()
           + b"\xff\xfeX\x00zz")
STR_OFF = 56
STR_LEN = PAYLOAD.index(b"\x00", STR_OFF) - STR_OFF

VS = {1: "One", 3: "Three", 255: "FF"}
LUA_BASE = {"DEC": "base.DEC", "HEX": "base.HEX", "DEC_HEX": "base.DEC_HEX", "HEX_DEC": "base.HEX_DEC",
            "NONE": "base.NONE"}


def _lua_str(b: bytes) -> str:
    return '"' + "".join("\\%d" % c for c in b) + '"'


def _lua_num(x: float) -> str:
    if x != x:
        return "(0/0)"
    if math.isinf(x):
        return "(1/0)" if x > 0 else "(-1/0)"
    return repr(x)


def _cases():
    """(FieldInfo, Lua ProtoField constructor, Lua add call args after the field, Python value)."""
    cases = []
    n = 0

    def add(fi, ctor, args, value):
        cases.append((fi, ctor, args, value))

    def uname():
        nonlocal n
        n += 1
        return "xt.f%d" % n

    sizes = {"uint8": 1, "uint16": 2, "uint24": 3, "uint32": 4, "uint64": 8,
             "int8": 1, "int16": 2, "int24": 3, "int32": 4, "int64": 8}
    for t, size in sizes.items():
        for base in (["DEC", "HEX", "DEC_HEX", "HEX_DEC"] if t[0] == "u" else ["DEC"]):
            for off in (0, 16):
                ab = uname()
                fi = FieldInfo(ab, f"{t} {base}", t, base)
                v = int.from_bytes(PAYLOAD[off:off + size], "big", signed=t[0] == "i")
                add(fi, f'ProtoField.{t}("{ab}", "{fi.name}", {LUA_BASE[base]})', f"tvb({off},{size})", v)
    # value strings (JSON shows only the number; -V "Name (n)" / "Unknown (n)")
    for base in ("DEC", "HEX", "DEC_HEX", "HEX_DEC"):
        for off in (0, 2, 16):
            ab = uname()
            fi = FieldInfo(ab, "VS " + base, "uint8", base, VS)
            add(fi, f'ProtoField.uint8("{ab}", "{fi.name}", {LUA_BASE[base]}, VS)', f"tvb({off},1)", PAYLOAD[off])
    # masks: value is shifted; JSON hex padded to the type width, -V hex to the mask width
    for t, size, mask, base, vs in (("uint16", 2, 0x0FF0, "DEC", None), ("uint16", 2, 0x0FF0, "HEX", None),
                                    ("uint16", 2, 0x01F0, "HEX_DEC", None), ("uint16", 2, 0x0FFF, "DEC_HEX", None),
                                    ("uint8", 1, 0x30, "HEX", VS), ("uint8", 1, 0x81, "DEC", None),
                                    ("uint32", 4, 0x00FF0000, "HEX", None), ("uint24", 3, 0x000F00, "DEC", None),
                                    ("int8", 1, 0xF0, "DEC", None), ("int16", 2, 0x0FF0, "DEC", None)):
        for off in (0, 17):
            ab = uname()
            fi = FieldInfo(ab, f"M {t} {mask:x}", t, base, vs, mask)
            raw = int.from_bytes(PAYLOAD[off:off + size], "big")
            v = (raw & mask) >> tv._shift(mask)
            if t[0] == "i":
                w = tv.mask_bits(mask)
                v = v - (1 << w) if v >> (w - 1) else v
            add(fi, f'ProtoField.{t}("{ab}", "{fi.name}", {LUA_BASE[base]}, {"VS" if vs else "nil"}, {mask})',
                f"tvb({off},{size})", v)
    # explicit Lua values
    for v in (0, 70000):
        ab = uname()
        add(FieldInfo(ab, "U16 hex", "uint16", "HEX"), f'ProtoField.uint16("{ab}", "U16 hex", base.HEX)',
            f"tvb(0,2), {v}", v)
    ab = uname()
    add(FieldInfo(ab, "U32", "uint32"), f'ProtoField.uint32("{ab}", "U32")', "tvb(0,4), -1", -1)
    ab = uname()
    add(FieldInfo(ab, "U64", "uint64", "HEX"), f'ProtoField.uint64("{ab}", "U64", base.HEX)',
        "tvb(0,8), UInt64(0xffffffff, 0xffffffff)", 2**64 - 1)
    ab = uname()
    add(FieldInfo(ab, "I64", "int64"), f'ProtoField.int64("{ab}", "I64")', "tvb(0,8), Int64(0, 0x80000000)", -2**63)
    # booleans
    for bits, mask, off in ((8, 0x04, 0), (8, 0x04, 1), (16, 0x0100, 0), (16, 0x0100, 2), (32, 0x80000000, 16),
                            (24, 0x800000, 16)):
        ab = uname()
        fi = FieldInfo(ab, f"B{bits}", "bool", mask=mask, bits=bits)
        raw = int.from_bytes(PAYLOAD[off:off + bits // 8], "big")
        add(fi, f'ProtoField.bool("{ab}", "{fi.name}", {bits}, nil, {mask})', f"tvb({off},{bits // 8})", raw)
    for v in (True, False):
        ab = uname()
        add(FieldInfo(ab, "B0", "bool"), f'ProtoField.bool("{ab}", "B0")', f"tvb(0,1), {str(v).lower()}", v)
        ab = uname()
        add(FieldInfo(ab, "BT", "bool", values={1: "On", 0: "Off"}),
            f'ProtoField.bool("{ab}", "BT", base.NONE, {{"On", "Off"}})', f"tvb(0,1), {str(v).lower()}", v)
    ab = uname()
    add(FieldInfo(ab, "BTm", "bool", values={1: "Set", 0: "Clear"}, mask=1, bits=8),
        f'ProtoField.bool("{ab}", "BTm", 8, {{"Set", "Clear"}}, 1)', "tvb(0,1)", PAYLOAD[0])
    # floats and doubles, from bytes and from Lua numbers
    ab = uname()
    ff = FieldInfo(ab, "Float", "float")
    ctor_f = f'ProtoField.float("{ab}", "Float")'
    ab = uname()
    fd = FieldInfo(ab, "Double", "double")
    ctor_d = f'ProtoField.double("{ab}", "Double")'
    add(ff, ctor_f, "tvb(32,4)", struct.unpack(">f", PAYLOAD[32:36])[0])
    add(ff, ctor_f, "le:tvb(36,4)", struct.unpack("<f", PAYLOAD[36:40])[0])
    add(fd, ctor_d, "tvb(40,8)", 0.1)
    add(fd, ctor_d, "tvb(48,8)", 1 / 3)
    for x in (0.1, 1 / 3, 1e-7, 123456789.123, -0.0, -math.nan, math.inf, -math.inf, 3.4028234663852886e38, 1e300,
              100.0, 1e21, 1e16, 123456.7, 1234567.8, 5e-324, 1e-5, 1e-4, 12345678.0, 16777217.0, 2.5, 0.5e-4):
        add(ff, ctor_f, f"tvb(0,4), {_lua_num(x)}", x)
        add(fd, ctor_d, f"tvb(0,8), {_lua_num(x)}", x)
    # strings
    ab = uname()
    fs = FieldInfo(ab, "Str", "string")
    ctor_s = f'ProtoField.string("{ab}", "Str")'
    add(fs, ctor_s, f"tvb({STR_OFF},{STR_LEN})", tv.decode_ascii(PAYLOAD[STR_OFF:STR_OFF + STR_LEN]))
    add(fs, ctor_s, f"tvb({STR_OFF},{STR_LEN + 3})", tv.decode_ascii(PAYLOAD[STR_OFF:STR_OFF + STR_LEN + 3]))
    ab = uname()
    add(FieldInfo(ab, "Strz", "string"), f'ProtoField.stringz("{ab}", "Strz")', f"tvb({STR_OFF},{STR_LEN + 1})",
        tv.decode_ascii(PAYLOAD[STR_OFF:STR_OFF + STR_LEN + 1]))
    for raw in (b"q\"\\\n\t\x01\x7f\xc3\xa9x", b"", b"a\x00b", b"ctl:\x07\x08\x0c\x0b\x0d\x1b\x1f",
                "c1:\u0080 nbsp\u00a0 zw\u200b bom\ufeff".encode()):
        add(fs, ctor_s, f"tvb(0,1), {_lua_str(raw)}", tv.lua_string(raw))
    # bytes, none
    ab = uname()
    fb = FieldInfo(ab, "Bytes", "bytes")
    add(fb, f'ProtoField.bytes("{ab}", "Bytes")', "tvb(0,4)", PAYLOAD[0:4])
    add(fb, f'ProtoField.bytes("{ab}", "Bytes")', "tvb(0,0)", b"")
    add(fb, f'ProtoField.bytes("{ab}", "Bytes")', "tvb(0,4), \"ABCD\"", b"ABCD")
    ab = uname()
    add(FieldInfo(ab, "Nothing", "none"), f'ProtoField.none("{ab}", "Nothing")', "tvb(0,0)", None)
    return cases


CASES = _cases()
EXPERTS = [ExpertInfo("xt.err", MALFORMED, ERROR, "Bad \"thing\""), ExpertInfo("xt.warn", PROTOCOL, WARN, "w"),
           ExpertInfo("xt.mal", MALFORMED, NOTE, "mal note")]
SEV = {ERROR: "expert.severity.ERROR", WARN: "expert.severity.WARN", NOTE: "expert.severity.NOTE"}
GRP = {MALFORMED: "expert.group.MALFORMED", PROTOCOL: "expert.group.PROTOCOL"}


def _lua_script() -> str:
    fields = {}
    for fi, ctor, _, _ in CASES:
        fields.setdefault(fi.abbrev, ctor)
    lines = ['local p = Proto("xt", "XTest Protocol")',
             'local VS = {[1]="One", [3]="Three", [255]="FF"}', "local F = {}"]
    for ab, ctor in fields.items():
        lines.append(f'F["{ab}"] = {ctor}')
    lines.append("local fl = {} for _, f in pairs(F) do fl[#fl+1] = f end p.fields = fl")
    lines.append("local E = {}")
    for e in EXPERTS:
        lines.append(f'E["{e.abbrev}"] = ProtoExpert.new("{e.abbrev}", "{e.abbrev} text", {GRP[e.group]}, '
                     f'{SEV[e.severity]})')
    lines.append("local el = {} for _, e in pairs(E) do el[#el+1] = e end p.experts = el")
    lines.append("function p.dissector(tvb, pinfo, tree)")
    lines.append("  local t = tree:add(p, tvb())")
    for fi, _, args, _ in CASES:
        if args.startswith("le:"):
            lines.append(f'  t:add_le(F["{fi.abbrev}"], {args[3:]})')
        else:
            lines.append(f'  t:add(F["{fi.abbrev}"], {args})')
    # tree shape: a field with children, experts among children, a text item, a generated item
    lines += ['  local x = t:add(F["xt.f1"], tvb(0,1))',
              '  x:add(F["xt.f2"], tvb(16,1))',
              f'  x:add_proto_expert_info(E["xt.err"], {_lua_str(EXPERTS[0].message.encode())})',
              '  x:add(F["xt.f2"], tvb(16,1))',
              '  local tx = t:add(tvb(0,2), "A text item")',
              '  tx:add(F["xt.f1"], tvb(0,1))',
              '  t:add(tvb(0,2), "Text leaf")',
              '  t:add(F["xt.f1"], tvb(0,1)):set_generated()',
              '  t:add_proto_expert_info(E["xt.warn"], "w")',
              '  t:add_proto_expert_info(E["xt.mal"], "mal note")',
              "end",
              f'DissectorTable.get("udp.port"):add({PORT}, p)']
    return "\n".join(lines) + "\n"


def _pcap(path: Path) -> None:
    udp = struct.pack(">HHHH", 12345, PORT, 8 + len(PAYLOAD), 0) + PAYLOAD
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, bytes([10, 0, 0, 1]),
                     bytes([10, 0, 0, 2]))
    frame = b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00" + ip + udp
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        f.write(struct.pack("<IIII", 1700000000, 0, len(frame), len(frame)) + frame)


@pytest.fixture(scope="module")
def tshark_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("tsv")
    (d / "x.lua").write_text(_lua_script())
    _pcap(d / "x.pcap")
    from conftest import tshark_cmd_run     # unprivileged, clean configuration (Wireshark >= 4.2: no Lua as root)
    base = ["-X", f"lua_script:{d / 'x.lua'}", "-r", str(d / "x.pcap")]
    js = tshark_cmd_run(base + ["-T", "json"], check=True).stdout
    vt = tshark_cmd_run(base + ["-V"], check=True).stdout
    assert b"Lua Error" not in js, js[-2000:]
    return js, vt


def _layer_pairs(js: bytes):
    doc = json.loads(js.decode("utf-8", "surrogateescape"), object_pairs_hook=lambda p: p)
    layers = dict(doc[0])["_source"]
    layers = dict(layers)["layers"]
    return layers


def _expected_layer_pairs():
    pairs = [(fi.abbrev, tv.json_value(fi, v)) for fi, _, _, v in CASES]
    f1 = next(fi for fi, *_ in CASES if fi.abbrev == "xt.f1")
    f2 = next(fi for fi, *_ in CASES if fi.abbrev == "xt.f2")
    pairs.append((f1.abbrev, tv.json_value(f1, PAYLOAD[0])))
    pairs.append((tv.children_key(f1), [(f2.abbrev, tv.json_value(f2, PAYLOAD[16]))]
                  + tv.expert_pairs(EXPERTS[0]) + [(f2.abbrev, tv.json_value(f2, PAYLOAD[16]))]))
    pairs.append((tv.LUA_TEXT_KEY, [(f1.abbrev, tv.json_value(f1, PAYLOAD[0]))]))
    pairs.append((tv.LUA_TEXT_KEY, ""))
    pairs.append((f1.abbrev, tv.json_value(f1, PAYLOAD[0])))   # generated: no change in JSON
    pairs += tv.expert_pairs(EXPERTS[1]) + tv.expert_pairs(EXPERTS[2])
    return pairs


def test_json_values(tshark_out):
    layers = _layer_pairs(tshark_out[0])
    keys = [k for k, _ in layers]
    assert keys[-2:] == [tv.LUA_FAKE_KEY, "xt"]
    got = layers[-1][1]
    want = _expected_layer_pairs()
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, (i, CASES[i][1:3] if i < len(CASES) else None)
    assert len(got) == len(want)


def test_json_layer_text(tshark_out):
    """The layer's text, byte for byte, including indentation, escaping and raw invalid UTF-8."""
    js = tshark_out[0]
    text = (tv.json_kv(tv.LAYER_DEPTH, tv.LUA_FAKE_KEY, "") + ",\n"
            + tv.json_kv(tv.LAYER_DEPTH, "xt", _expected_layer_pairs()) + "\n" + tv.PACKET_TAIL[1:] + "\n]\n")
    assert js.endswith(text.encode("utf-8", "surrogateescape"))
    assert js.startswith(b"[\n" + tv.packet_head("2023-11-14").encode())


def test_v_labels(tshark_out):
    lines = tshark_out[1].decode("utf-8", "surrogateescape").split("\n")
    start = lines.index("XTest Protocol")
    body = lines[start + 1:]
    for i, (fi, _, args, v) in enumerate(CASES):
        assert body[i] == tv.V_INDENT + tv.label(fi, v), (i, args)
    rest = body[len(CASES):]
    f1 = CASES[0][0]
    e = EXPERTS[0]
    exp = tv.expert_lines(e)
    assert rest[0] == tv.V_INDENT + tv.label(f1, PAYLOAD[0])
    assert rest[2:6] == [2 * tv.V_INDENT + exp[0]] + [3 * tv.V_INDENT + s for s in exp[1:]]
    assert rest[7] == tv.V_INDENT + "A text item"
    assert rest[9] == tv.V_INDENT + "Text leaf"
    assert rest[10] == tv.V_INDENT + tv.bracket(tv.label(f1, PAYLOAD[0]))
    assert rest[11] == tv.V_INDENT + tv.expert_lines(EXPERTS[1])[0]


def test_pure_rules():
    f = FieldInfo("a.b", "N", "uint16", "HEX", mask=0x0FF0)
    assert tv.json_value(f, 0xEF) == "0x00ef"
    assert tv.label(f, 0xEF) == ".... 1110 1111 .... = N: 0xef"
    assert tv.json_escape('a"\\\n\x01\x7f/') == 'a\\"\\\\\\n\\u0001\x7f/'
    assert tv.format_float(-math.nan, True) == "-nan"
    assert tv.format_float(1e300, True) == "inf"
    assert tv.decode_utf8(b"\xed\xa0\x80x\xe2\x82x") == "\ufffd" * 3 + "x" + "\ufffd" + "x"
