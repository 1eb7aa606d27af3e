"""Iceball: system packets and base-mod Lua packets, over ENet (UDP) or TCP (specs/iceball-protocol.txt and the
Iceball section of NOTES.md). Read this beside the spec: one entry per spec paragraph.

Wire facts (NOTES.md): all little-endian. Over ENet, channel 1 carries system packets (first byte = system id)
and channel 0 Lua packets with no 0x40-0x7F framing (first byte = base-mod id). Over TCP, system packets are
sent as they are and Lua packets are framed by `0x3F + len` (len 1-63) or `0x7F len.u16`.
The implementation inserted KEEPALIVE at id 3, so every base-mod id from 3 on is the spec's + 1, and several
layouts changed: decoded as implemented by default; the preference `iceball.numbering` selects the spec.
"""
from ..engine.blocks_dispatch import Dispatch, Fit
from ..engine.blocks_fixed_point import Packed, ScaledByte
from ..engine.blocks_framing import Counted, Framed
from ..engine.blocks_transfer import INFLATED_LIMIT, Transfer
from ..engine.blocks_vectors import Vec3, Vec3F
from ..engine.channel_protocol import ChannelProtocol
from ..engine.fields import (I8, I16LE, U8, U16LE, U32BE, U32LE, Bytes, CString, Flag, Flags, Packet, Struct)

PORT = 20737
CONNECT_DATA = 0x42454331            # "1CEB" little-endian: ENet connect data of an Iceball client
LUA_MAX = 2556                       # the implementation's largest Lua payload (the spec says 1276)

# --- field shapes used by many packets -------------------------------------------------------------------------------


def pid():
    return U8("pid", "Player ID")


def block_xyz():
    return (U16LE("x", "Block x"), U16LE("y", "Block y"), U16LE("z", "Block z"))


def text(name="msg", label="Message"):
    return CString(name, label, max_size=LUA_MAX)


def yaw(code="b"):
    """ya: 256 steps to a full circle."""
    return ScaledByte("ya", "Yaw", code, 256, scale=360.0, unit="°")


def pitch(code="b"):
    """xa: 256 steps to a half circle."""
    return ScaledByte("xa", "Pitch", code, 256, scale=180.0, unit="°")


def fixed(divisor):
    """A signed 16-bit fixed-point number: 11.5 positions (/32), 8.8 velocities (/256)."""
    return lambda n, label: Packed(n, label, "h", divisor)


COLOR = U32LE("color", "Colour (0xAARRGGBB)", base="HEX")
KEYS = Flags(U8("keys", "Keys", base="HEX"), (
    Flag("up", "Up", 0x01), Flag("down", "Down", 0x02), Flag("left", "Left", 0x04), Flag("right", "Right", 0x08),
    Flag("sneak", "Sneak / scope", 0x10), Flag("crouch", "Crouch", 0x20), Flag("jump", "Jump", 0x40),
    Flag("reserved", "Reserved", 0x80)))
TOOLS = {0: "Spade", 1: "Block", 2: "Gun", 3: "Grenade"}
HITS = {0: "None", 1: "Head", 2: "Body", 3: "Limb"}
MODES = {1: "Normal player", 2: "Map editor", 3: "Spectator"}
BOXES = {0: "Solid", 1: "Hollow", 2: "Walls", 3: "Frame"}

# NADE_THROW: start position 11.5, velocity 8.8, fuse in 1/100 s; server->client also names the thrower.
GRENADE = (Vec3("pos", "Start position", fixed(32)), Vec3("vel", "Velocity", fixed(256)),
           U16LE("fuse", "Fuse (1/100 s)"))


def with_pid_from_server(*fields):
    """Server->client carries the player id first, client->server not: told apart by the length."""
    return Fit("by_direction", Struct("from_server", None, pid(), *fields), Struct("from_client", None, *fields))


# --- base-mod Lua packets, as implemented (pkg/base/network.lua) -----------------------------------------------------

IMPLEMENTED = {
    1: Packet("ping", "PING", U16LE("time", "Time (ms, low 16 bits)"), info="time={time}"),
    2: Packet("pong", "PONG", U16LE("time", "Time (ms, low 16 bits)"), info="time={time}"),
    3: Packet("keepalive", "KEEPALIVE", U8("value", "Value")),
    4: Packet("plr_pos", "PLR_POS", pid(), Vec3F("pos", "Position"), Vec3F("vel", "Velocity"), info="pid={pid}"),
    5: Packet("plr_orient", "PLR_ORIENT", pid(), yaw(), pitch(), KEYS, info="pid={pid} keys={keys}"),
    6: Packet("plr_add", "PLR_ADD", pid(), U8("team", "Team"), U8("weapon", "Weapon"),
              U8("mode", "Mode", values=MODES), I16LE("score", "Score"), I16LE("kills", "Kills"),
              I16LE("deaths", "Deaths"), text("name", "Name"), text("squad", "Squad"),
              info='pid={pid} "{name}" team={team}'),
    7: Packet("plr_id", "PLR_ID", pid(), info="pid={pid}"),
    8: Packet("plr_rm", "PLR_RM", pid(), info="pid={pid}"),
    9: Packet("blk_add", "BLK_ADD", *block_xyz(), U8("b", "Blue"), U8("g", "Green"), U8("r", "Red"),
              U8("type", "Block type"), info="x={x} y={y} z={z}"),
    10: Packet("blk_rm1", "BLK_RM1", *block_xyz(), info="x={x} y={y} z={z}"),
    11: Packet("blk_rm3", "BLK_RM3", *block_xyz(), info="x={x} y={y} z={z}"),
    12: Packet("blk_collapse", "BLK_COLLAPSE", *block_xyz(), info="x={x} y={y} z={z}"),
    13: Packet("chat_send", "CHAT_SEND", text(), info='"{msg}"'),
    14: Packet("chat_send_team", "CHAT_SEND_TEAM", text(), info='"{msg}"'),
    15: Packet("chat_add_text", "CHAT_ADD_TEXT", COLOR, text(), info='"{msg}"'),
    16: Packet("chat_add_killfeed", "CHAT_ADD_KILLFEED", COLOR, text(), info='"{msg}"'),
    17: Packet("plr_spawn", "PLR_SPAWN", pid(), Vec3F("pos", "Position"), yaw("B"), pitch("B"), info="pid={pid}"),
    18: Packet("plr_offer", "PLR_OFFER", I8("team", "Team (-1: server chooses)"), I8("weapon", "Weapon"),
               text("name", "Name"), info='team={team} "{name}"'),
    19: Packet("item_pos", "ITEM_POS", U16LE("iid", "Item ID"), I16LE("x", "x"), I16LE("y", "y"), I16LE("z", "z"),
               Flags(U8("flags", "Flags", base="HEX"), (Flag("visible", "Visible", 0x01),)), info="iid={iid}"),
    20: Packet("plr_gun_hit", "PLR_GUN_HIT", U8("tpid", "Target player ID"), U8("hit", "Hit", values=HITS),
               info="tpid={tpid} hit={hit}"),
    21: Packet("plr_damage", "PLR_DAMAGE", pid(), U8("health", "New health"), info="pid={pid} health={health}"),
    22: Packet("plr_restock", "PLR_RESTOCK", pid(), info="pid={pid}"),
    23: Packet("item_carrier", "ITEM_CARRIER", U16LE("iid", "Item ID"), U8("pid", "Carrier (0: none)"),
               info="iid={iid} pid={pid}"),
    24: Packet("plr_tool", "PLR_TOOL", pid(), U8("tool", "Tool", values=TOOLS), info="pid={pid} tool={tool}"),
    25: Packet("plr_blk_color", "PLR_BLK_COLOR", pid(), U8("r", "Red"), U8("g", "Green"), U8("b", "Blue"),
               info="pid={pid} r={r} g={g} b={b}"),
    26: Packet("plr_blk_count", "PLR_BLK_COUNT", pid(), U16LE("blocks", "Blocks"), info="pid={pid} blocks={blocks}"),
    27: Packet("plr_gun_tracer", "PLR_GUN_TRACER", pid(), info="pid={pid}"),
    28: Packet("nade_throw", "NADE_THROW", with_pid_from_server(*GRENADE), info="fuse={fuse}"),
    29: Packet("map_rcirc", "MAP_RCIRC"),
    30: Packet("plr_gun_reload", "PLR_GUN_RELOAD", with_pid_from_server()),
    31: Packet("chat_send_squad", "CHAT_SEND_SQUAD", text(), info='"{msg}"'),
    32: Packet("team_score", "TEAM_SCORE", I8("team", "Team"), I16LE("score", "Score"),
               info="team={team} score={score}"),
    33: Packet("blk_damage", "BLK_DAMAGE", *block_xyz(), U16LE("damage", "Damage"), info="x={x} y={y} z={z}"),
    34: Packet("piano", "PIANO", with_pid_from_server()),
    35: Packet("nade_pin", "NADE_PIN", with_pid_from_server()),
    36: Packet("build_box", "BUILD_BOX", U8("box", "Box type", values=BOXES),
               I16LE("x1", "x1"), I16LE("y1", "y1"), I16LE("z1", "z1"), I16LE("x2", "x2"), I16LE("y2", "y2"),
               I16LE("z2", "z2"), U8("r", "Red"), U8("g", "Green"), U8("b", "Blue"), U8("type", "Block type")),
    37: Packet("plr_gun_shot", "PLR_GUN_SHOT", pid(), U8("value", "Value")),
    38: Packet("new_map", "NEW_MAP", Bytes("data", "Data")),       # no layout is documented
    39: Packet("fog_color", "FOG_COLOR", U8("r", "Red"), U8("g", "Green"), U8("b", "Blue"),
               info="r={r} g={g} b={b}"),
}

# --- the spec's numbering and layouts (before KEEPALIVE): ids 1-2 as implemented, id n >= 3 is implemented n+1 -----

SPEC_CHANGED = {   # implemented id -> the spec's layout where it differs
    4: Packet("plr_pos_spec", "PLR_POS", pid(), Vec3("pos", "Position (11.5 fixed point)", fixed(32)),
              info="pid={pid}"),
    5: Packet("plr_orient_spec", "PLR_ORIENT", pid(), yaw("B"), pitch("B"), KEYS, info="pid={pid} keys={keys}"),
    18: Packet("plr_offer_spec", "PLR_OFFER", I8("team", "Team (-1: server chooses)"), U8("weapon", "Weapon"),
               text("name", "Name"), info='team={team} "{name}"'),
    26: Packet("plr_blk_count_spec", "PLR_BLK_COUNT", pid(), U8("blocks", "Blocks"),
               info="pid={pid} blocks={blocks}"),
    28: Packet("nade_throw_spec", "NADE_THROW", *GRENADE, info="fuse={fuse}"),
    30: Packet("plr_gun_reload_spec", "PLR_GUN_RELOAD", pid(), info="pid={pid}"),
    32: Packet("team_score_spec", "TEAM_SCORE", U8("team", "Team"), U16LE("score", "Score"),
               info="team={team} score={score}"),
}
SPEC = {(code if code < 3 else code - 1): SPEC_CHANGED.get(code, packet)
        for code, packet in IMPLEMENTED.items() if code != 3 and code <= 33}

LUA = Struct("lua", None, Dispatch(
    "lua_id", "Lua packet id", {"implemented": IMPLEMENTED, "spec": SPEC}, variant_key="numbering",
    unknown="Unknown Lua packet id {} (not a base-mod packet)"))

# --- system packets ---------------------------------------------------------------------------------------------------

FILE_TYPES = {0: "Reserved", 1: "JSON data", 2: "Log data", 3: "Lua script", 4: "Icemap data", 5: "VXL data",
              6: "Autodetected map data", 7: "PMF model", 8: "TGA image", 9: "WAV audio", 10: ".it music module",
              11: "Raw binary data", 12: "PNG image", 13: "Reserved", 14: "Reserved", 15: "Reserved"}

# What a transferred file holds, decoded from the inflated bytes.
TEXT = Struct("content", None, CString("text", "Text", max_size=INFLATED_LIMIT))
ICEMAP = Struct(
    "icemap", "Icemap",
    CString("magic", "Magic", size=6), U8("eof", "Text end", base="HEX", expect=0x1A), U8("version", "Version"),
    CString("section", "First section", size=7), U8("section_end", "Section tag end", base="HEX"),
    U32LE("section_length", "Section length"),
    U16LE("xlen", "Size x"), U16LE("ylen", "Size y (height)"), U16LE("zlen", "Size z"),
    summary="Icemap {xlen} x {ylen} x {zlen}")
TGA = Struct(
    "tga", "TGA image",
    U8("id_length", "ID length"), U8("colour_map_type", "Colour map type"), U8("image_type", "Image type"),
    U16LE("map_first", "Colour map first entry"), U16LE("map_length", "Colour map length"),
    U8("map_depth", "Colour map entry bits"), U16LE("x_origin", "x origin"), U16LE("y_origin", "y origin"),
    U16LE("width", "Width"), U16LE("height", "Height"), U8("depth", "Pixel depth"),
    U8("descriptor", "Image descriptor", base="HEX"),
    summary="TGA {width} x {height}, {depth} bits")
PNG = Struct(
    "png", "PNG image",
    Bytes("signature", "Signature", size=8), U32BE("chunk_length", "Chunk length"),
    CString("chunk_type", "Chunk type", size=4), U32BE("width", "Width"), U32BE("height", "Height"),
    U8("bit_depth", "Bit depth"), U8("colour_type", "Colour type"),
    summary="PNG {width} x {height}")
INSIDE = {1: TEXT, 2: TEXT, 3: TEXT, 4: ICEMAP, 8: TGA, 12: PNG}


def transfer(step, **kw):
    return Transfer("file", "File", step, kinds=FILE_TYPES, **kw)


def counted(prefix, label, terminated=True):
    """`len.u8 text[len] 0x00`."""
    fields = [U8(f"{prefix}_len", f"{label} length"), Counted(prefix, label, length=f"{prefix}_len")]
    if terminated:
        fields.append(U8("terminator", "Terminator", expect=0))
    return fields


SYSTEM = {
    0x0F: Packet("base_dir", "BASE_DIR", *counted("base", "Base directory"), info='"{base}"'),
    0x10: Packet("auth", "AUTH", Bytes("salt", "Salt", size=32), U32LE("version", "Protocol version"),
                 *counted("name", "Name"), info='version={version} "{name}"'),
    0x11: Packet("auth_ack", "AUTH_ACK", Bytes("data", "Package directory")),   # no layout in the spec
    0x17: Packet("quit", "QUIT", *counted("msg", "Message"), info='"{msg}"'),
    0x30: Packet("file_request", "FILE_REQUEST", U8("flags", "Flags (bits 0-3: file type)", base="HEX"),
                 *counted("name", "File name"), transfer("request", names={"name": "name", "kind": "flags"}),
                 info='"{name}"'),
    0x31: Packet("file_start", "FILE_START", U32LE("clen", "Compressed length"), U32LE("ulen", "Uncompressed length"),
                 transfer("start", names={"total": "clen", "size": "ulen"}), info="clen={clen} ulen={ulen}"),
    0x32: Packet("file_end", "FILE_END", transfer("end", inside=INSIDE), info="{file}"),
    0x33: Packet("file_block", "FILE_BLOCK", U32LE("offset", "Offset"),
                 U16LE("len", "Length", check_range=(1, 1024)), Counted("data", "Data", length="len", text=False),
                 transfer("piece", names={"at": "offset", "data": "data"}), info="offset={offset} len={len}"),
    0x34: Packet("file_abort_client", "FILE_ABORT_CLIENT", transfer("abort", who="Client")),
    0x35: Packet("file_abort_server", "FILE_ABORT_SERVER", transfer("abort", who="Server")),
    **{code: Packet("lua_short", "LUA", Framed("lua_length", "Lua packet length", length="id", delta=-0x3F,
                                               body=LUA, shown=True))
       for code in range(0x40, 0x7F)},
    0x7F: Packet("lua_long", "LUA", U16LE("length", "Lua packet length"),
                 Framed("lua_frame", "Lua packet", length="length", body=LUA, limit=LUA_MAX)),
}

MESSAGE = Struct("message", None, Dispatch("id", "Packet id", {"system": SYSTEM},
                                           unknown="Unknown system packet id {}"))

PROTOCOL = ChannelProtocol(
    "iceball", "Iceball",
    messages={0: LUA, 1: MESSAGE, None: MESSAGE},      # ENet channel 0: Lua, 1: system; TCP: system + framing
    ports={"enet.connect_data": (CONNECT_DATA,), "enet.port": (PORT,), "tcp.port": (PORT,)},
    variant_pref=("numbering", "Base-mod packet numbering", "implemented", ("implemented", "spec")),
    stream_start=(0x0F, 2),                            # any TCP port: the session starts with BASE_DIR
)
