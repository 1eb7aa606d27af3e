"""Rutentoy: a voxel game over TCP or SCTP, port 29778 (specs/rutentoy-protocol.txt; decisions in NOTES.md).

Read beside the spec. No length field: a PDU's length is the sum of its struct's fields (NOTES.md: GUI Open 5,
Message 70, World Chunk 1033), chosen by opcode and direction (the side on 29778 is the server). Opcodes are the
headings' hexadecimal numbers; the structs' own `opcode` defaults are a second numbering (preference
`rutentoy.numbering`, recognised per connection in `auto`). 04 is Object Delete server->client, except while a
server-to-client texture exchange runs (the client answered HAVETEX 0): then, as always client->server, it is a
Texture Chunk. 0A GUI Items has no layout: framing stops there.
"""
from ..engine.blocks_bits import BitFields, Bits, Combined
from ..engine.blocks_cookies import Arg, Command, ImageReassembly, TextReassembly
from ..engine.blocks_dispatch import Select
from ..engine.blocks_fixed_point import Fixed8_8, Fixed24_8, FixedPoint, Turn16, View
from ..engine.blocks_voxels import BlockMap, SplitIdGrid
from ..engine.fields import I32LE, U8, U16LE, U32LE, Bytes, Flag, Flags, Packet, Struct, Switch, WhenPref
from ..engine.stream_protocol import StreamProtocol

PORT = 29778

# --- ID lists (spec "Block IDs", "Item IDs"; hexadecimal) ---------------------------------------------------------

BLOCKS = {
    0x000: "Empty/Air", 0x010: "Dirt", 0x011: "Grass-covered dirt", 0x012: "Leaves-covered dirt", 0x013: "Sand",
    0x014: "Red Sand", 0x015: "Gravel", 0x016: "Mud", 0x017: "Clay", 0x018: "Mud Bricks", 0x019: "Clay Bricks",
    0x01A: "Tilled Dirt", 0x020: "Stone", 0x021: "Marble", 0x022: "Basalt", 0x023: "Obsidian", 0x024: "Iron",
    0x025: "Coal", 0x026: "Ruby", 0x027: "Olivine", 0x028: "Sapphire", 0x029: "Zircon",
    0x030: "Brown-barked Log, facing Y", 0x031: "Brown-barked Log, facing X", 0x032: "Brown-barked Log, facing Z",
    0x033: "White-barked Log, facing Y", 0x034: "White-barked Log, facing X", 0x035: "White-barked Log, facing Z",
    0x036: "Leaves", 0x037: "Leaves with Fruit", 0x038: "Vine", 0x039: "Grass Tuft", 0x03A: "Small Bush",
    0x03B: "Brown-barked Sapling", 0x03C: "White-barked Sapling", 0x03D: "Dead Bush", 0x03E: "Cactus",
    0x03F: "Water Lily", 0x040: "White Flower", 0x041: "Yellow Flower", 0x042: "Red Flower", 0x043: "Blue Flower",
    0x044: "Red Berries", 0x045: "Black Berries", 0x046: "White Mushroom", 0x047: "Brown Mushroom",
    0x048: "Orange Mushroom", 0x049: "Red Mushroom", 0x04A: "Dead Crops",
    **{0x04B + i: f"Crops ({h})" for i, h in enumerate(("25%", "43.75%", "62.5%", "81.25%", "100%"))},
    **{base + i: f"{name} ({h})" for base, name in ((0x050, "Freshwater"), (0x054, "Swampwater"),
                                                     (0x058, "Seawater"), (0x05C, "Lava"))
       for i, h in enumerate(("100%", "75%", "50%", "25%"))},
    0x060: "Wooden Planks", 0x061: "Wooden Fence",
    **{0x062 + i: f"Wooden Planks Half-block, facing {d}" for i, d in enumerate(("-Y", "+Y", "-X", "+X", "-Z", "+Z"))},
    0x068: "Pale Wooden Planks", 0x069: "Pale Wooden Fence",
    **{0x06A + i: f"Pale Wooden Planks Half-block, facing {d}"
       for i, d in enumerate(("-Y", "+Y", "-X", "+X", "-Z", "+Z"))},
    0x070: "Rope, facing Y", 0x071: "Rope, facing X", 0x072: "Rope, facing Z", 0x073: "Chain, facing Y",
    0x074: "Chain, facing X", 0x075: "Chain, facing Z",
    **{0x076 + i: f"Ladder, facing {d}" for i, d in enumerate(("-X", "+X", "-Y", "+Y", "-Z", "+Z"))},
    0x07C: "Unlit Firepit", 0x07D: "Lit Firepit",
}
ITEMS = {0x800: "Stick", 0x801: "Stone", 0x802: "Flint", 0x803: "Kindling", 0x810: "Sharpened Stone",
         0x811: "Stone Axe", 0x812: "Flint Firelighter", 0x813: "Steel Knife"}
BLOCKS_AND_ITEMS = {**BLOCKS, **ITEMS}

MODELS = {0: "Humanoid", 1: "Block/Item"}
META_TYPES = {0: "Color", 1: "Animate", 2: "Equipment"}
ANIMATIONS = {0: "Idle/Stand", 1: "Crouch", 2: "Punch Right", 3: "Punch Left", 4: "Swing Right", 5: "Swing Left",
              6: "Death", 7: "Item", 8: "Aim Weapon Start", 9: "Aim Weapon End", 10: "Hurt"}
SLOTS = {0: "Head", 1: "Chest", 3: "Legs", 4: "Boots", 5: "Right Hand", 6: "Left Hand", 7: "Left Hip",
         8: "Right Hip", 9: "Back Holster 1", 0xA: "Back Holster 2", 0xB: "Backpack"}
INTERACTIONS = {0: "Use Block", 1: "Use Object", 2: "Use Item in Right Hand", 3: "Use Item in Left Hand",
                4: "Use Item in Right Hand on Object", 5: "Use Item in Left Hand on Object",
                6: "Use Item in Right Hand on Block", 7: "Use Item in Left Hand on Block",
                8: "Swing Item in Right Hand", 9: "Swing Item in Left Hand",
                0xA: "Attack Object with Item in Right Hand", 0xB: "Attack Object with Item in Left Hand",
                0xC: "Begin Breaking Block", 0xE: "Complete Breaking Block", 0xF: "Cancel Breaking Block"}
GUI_MODES = {0: "Close", 1: "Player", 2: "Cooking", 3: "8x8 Container"}
GUI_ACTIONS = {0: "Take", 1: "Place", 2: "Swap", 3: "Throw"}
CHANNELS = {0: "Chat", 1: "Small Announcement", 2: "Announcement", 3: "Hotbar", 4: "Timer", 5: "Client IPC",
            6: "Plugin IPC", 7: "System"}
EFFECTS = {0: "Block Breaking Animation", 1: "Weather (the spec also lists Block/Item Break as 1)",
           2: "Explosion", 3: "Smoke", 4: "Water Splash"}
WEATHER = {0: "Clear", 1: "Start Day Cycle", 2: "Stop Day Cycle", 3: "Sky Color", 4: "Light Color", 5: "Fog"}
PERMISSIONS = ("Invulnerable", "Allow Flight", "Allow No-clip", "Unlimited Items", "Set Blocks Instantly",
               "Disallow Movement", "Disallow Rotation", "Disallow Jumping", "Player X-ray", "NPC X-ray",
               "No Fall Damage", "Disallow Player-vs-Player Damage", "Disallow Player-vs-NPC Damage",
               "Spectate on Death", "Auto Respawn", "Allow Debug Info")

# --- shared pieces ---------------------------------------------------------------------------------------------


def chunk_coords(name, label):
    """x i21 (bits 0-20), y i19 (21-39), z i21 (40-60) of one little-endian u64."""
    return BitFields(name, label, "Q", (Bits("chunk_x", "Chunk X", 0, 21, signed=True),
                                        Bits("chunk_y", "Chunk Y", 21, 19, signed=True),
                                        Bits("chunk_z", "Chunk Z", 40, 21, signed=True)))


def rgbx(name, label, last="x", last_label="Unused"):
    """Four bytes in wire order (R, G, B, then glow / scale / alpha / unused) of a little-endian u32."""
    return BitFields(name, label, "I", (Bits(f"{name}_r", "Red", 0, 8), Bits(f"{name}_g", "Green", 8, 8),
                                        Bits(f"{name}_b", "Blue", 16, 8), Bits(f"{name}_{last}", last_label, 24, 8)))


def position():
    """x, y, z: signed 24.8 fixed point."""
    return (Fixed24_8("x", "X"), Fixed24_8("y", "Y"), Fixed24_8("z", "Z"))


# --- packets (heading numbering) ---------------------------------------------------------------------------------

DISCONNECT = Packet("disconnect", "Disconnect")
PING = Packet("ping", "Ping", U32LE("cookie", "Cookie", base="HEX"), info="cookie={cookie}")
CREATE = Packet("create", "Object Create",
                U32LE("oid", "Object ID"),
                U16LE("model", "Model", values=MODELS),
                Select("model", {1: Struct("block_item", None, U16LE("model_item", "Block/item", base="HEX",
                                                                     values=BLOCKS_AND_ITEMS))},
                       U16LE("model_meta", "Model metadata")),
                info="oid={oid} model={model}")
MOVE = Packet("move", "Object Move",
              U32LE("oid", "Object ID"),
              *position(),
              Turn16("yaw", "Yaw"),
              Turn16("pitch", "Pitch"),
              info="oid={oid}")
DELETE = Packet("delete", "Object Delete", U32LE("oid", "Object ID"), info="oid={oid}")
TEXTURE = Packet("texture", "Object Texture Chunk",
                 U32LE("oid", "Object ID"),
                 U32LE("cookie", "Texture cookie", base="HEX"),
                 U16LE("data_len", "Data length", check_range=(0, 1024)),
                 ImageReassembly("data", "QOI data chunk", size=1024, key="cookie", length="data_len", max_side=128,
                                 digest_from=("HASTEX", "digest"), clears="texture_exchange"),
                 info="oid={oid} cookie={cookie} len={data_len}")
METADATA = Packet("metadata", "Object Metadata",
                  U32LE("oid", "Object ID"),
                  U8("meta_type", "Metadata type", values=META_TYPES),
                  Select("meta_type", {
                      0: Struct("color", None, rgbx("color", "Color", "glow", "Glow")),
                      1: Struct("animate", None, U32LE("animation", "Animation", values=ANIMATIONS)),
                      2: Struct("equipment", None, BitFields("equipment", "Equipment", "I", (
                          Bits("item", "Item/block", 0, 12, values=BLOCKS_AND_ITEMS, strict=True, base="HEX"),
                          Bits("slot", "Slot", 12, 4, values=SLOTS, strict=True)))),
                  }, U32LE("meta_data", "Metadata", base="HEX")),
                  info="oid={oid} type={meta_type}")
INTERACT = Packet("interact", "Interact",
                  BitFields("mode", "Mode", "B", (Bits("action", "Attack/use", 4, 4),
                                                  Bits("interaction", "Interaction", 0, 4, values=INTERACTIONS,
                                                       strict=True))),
                  U32LE("oid", "Target object ID"),
                  I32LE("block_x", "Block X"), I32LE("block_y", "Block Y"), I32LE("block_z", "Block Z"),
                  U16LE("item", "Item", base="HEX", values=BLOCKS_AND_ITEMS),
                  info="interaction={interaction} oid={oid}")
GUI_OPEN = Packet("gui_open", "GUI Open",
                  U16LE("mode", "Mode", values=GUI_MODES),
                  U16LE("cookie", "GUI cookie"),
                  info="mode={mode} cookie={cookie}")
GUI_INTERACT = Packet("gui_interact", "GUI Interact",
                      U8("mode", "Mode", values=GUI_ACTIONS),
                      U16LE("send_cookie", "Source GUI cookie"), U16LE("recv_cookie", "Destination GUI cookie"),
                      U8("send_slot", "Source slot"), U8("recv_slot", "Destination slot"),
                      info="mode={mode}")
IPC = (
    Command("INFO", "Server info", (Arg("slots", "Total player slots", "uint32"),
                                    Arg("players", "Occupied player slots", "uint32"),
                                    Arg("timezone", "Timezone offset"), Arg("motd", "Message of the day"),
                                    Arg("extra", "Extra text")), sep=";", alone="Server info request"),
    Command("LOGIN", "Login", (Arg("user", "User name"), Arg("passkey", "Passkey")), maxsplit=1),
    Command("HASTEX", "Has texture", (Arg("digest", "Texture digest (xxHash32)"),)),
    Command("HAVETEX", "Have texture", (Arg("have", "Have texture", "uint32"),),
            sets=("have", 0, "texture_exchange")),          # HAVETEX 0: the peer now sends the texture
    Command("LEAVE", "Leave", (Arg("reason", "Reason"),), maxsplit=0),
)
MESSAGE = Packet("message", "Message",
                 U32LE("cookie", "Message cookie", base="HEX"),
                 BitFields("channel_byte", "Channel", "B", (Bits("final", "Final chunk", 7, 1),
                                                            Bits("channel", "Channel", 0, 7, values=CHANNELS))),
                 TextReassembly("chunk", "Text chunk", size=64, key="cookie", final="final", channel="channel",
                                command_channel=5, commands=IPC),
                 info="cookie={cookie} channel={channel}")
WORLD_CHUNK = Packet("world_chunk", "World Chunk",
                     chunk_coords("coords", "Chunk coordinates"),
                     SplitIdGrid("blocks", "Blocks", count=512, names=BLOCKS),
                     # every block by position, i = x + 8 (y + 8 z) (NOTES.md): a row item per (z, y), on by default
                     WhenPref("block_map", "Show every block of a world chunk by position (x, y, z)",
                              BlockMap("blocks", "Blocks", side=8, layout="split", back=1024, hex_ids=True),
                              default=True),
                     info="({chunk_x}, {chunk_y}, {chunk_z})")
SET_BLOCK = Packet("set_block", "Set Block",
                   chunk_coords("coords", "Chunk coordinates"),
                   BitFields("position", "Block position", "H", (
                       Bits("block_x", "Block X", 0, 4), Bits("block_y", "Block Y", 4, 4),
                       Bits("block_z", "Block Z", 8, 4), Bits("block_nibble", "Block ID upper nibble", 12, 4))),
                   U8("block", "Block ID low byte", base="HEX"),
                   Combined("block_id", "Block ID", (("block_nibble", 8), ("block", 0)), values=BLOCKS),
                   info="({chunk_x}, {chunk_y}, {chunk_z}) block={block_id}")
RAW_WORDS = Struct("words", None, *(U32LE(f"data{i}", f"Data {i}", base="HEX") for i in (2, 3, 4)))
DAY = FixedPoint("day_time", "Time of day", "I", 1 << 32, unit=" day")       # unsigned 0.32 of a day
WEATHER_DATA = {
    1: Struct("day_start", None, DAY, *RAW_WORDS.fields[1:]),
    2: Struct("day_stop", None, DAY, *RAW_WORDS.fields[1:]),
    3: Struct("sky", None, rgbx("day_sky", "Daytime sky"), rgbx("night_sky", "Nighttime sky"),
              rgbx("dusk_sky", "Dawn/dusk sky", "a", "Alpha")),
    4: Struct("light", None, rgbx("sunlight", "Sunlight"), rgbx("artificial", "Artificial light"),
              rgbx("ambient", "Ambient")),
    5: Struct("fog", None, rgbx("fog", "Fog color"), U32LE("density", "Fog density scale"),
              FixedPoint("interpolation", "Interpolation time", "I", 1,
                         views=(View("", "Interpolation time", 40.0, " ms"),))),     # in 40 ms steps
}
POSITION_EFFECT = Struct("at", None, *position(), rgbx("look", "Color and scale", "scale", "Scale"))
WORLD_EFFECT = Packet("world_effect", "World Effect",
                      U8("mode", "Mode", values=EFFECTS),
                      Select("mode", {
                          0: Struct("breaking", None, I32LE("block_x", "Block X"), I32LE("block_y", "Block Y"),
                                    I32LE("block_z", "Block Z"),
                                    U32LE("progress", "Breaking progress", check_range=(0, 8))),   # 0: removed
                          1: Struct("weather", None, U32LE("weather", "Weather", values=WEATHER),
                                    Select("weather", WEATHER_DATA, RAW_WORDS)),
                          2: POSITION_EFFECT, 3: POSITION_EFFECT, 4: POSITION_EFFECT,
                      }, Bytes("effect_data", "Effect data", size=16)),
                      info="mode={mode}")
GAMEMODE = Packet("gamemode", "Gamemode Settings",
                  Flags(U16LE("permissions", "Permissions", base="HEX"),
                        tuple(Flag(label.lower().replace("-", "_").replace(" ", "_").replace("/", "_"), label, 1 << i)
                              for i, label in enumerate(PERMISSIONS))),
                  Fixed8_8("walk_speed", "Walk speed"),
                  Fixed8_8("jump_height", "Jump height"),
                  info="permissions={permissions}")

# --- numberings and directions -------------------------------------------------------------------------------------

HEADER = Struct("header", None, U8("opcode", "Opcode", base="HEX"))

SHARED = {0x00: DISCONNECT, 0x01: PING, 0x02: CREATE, 0x03: MOVE, 0x05: METADATA, 0x07: INTERACT, 0x08: GUI_OPEN,
          0x09: GUI_INTERACT, 0x0B: MESSAGE, 0x10: WORLD_CHUNK, 0x11: SET_BLOCK, 0x12: WORLD_EFFECT, 0x20: GAMEMODE}
HEADING = {"c2s": Switch("opcode", {**SHARED, 0x04: TEXTURE}),        # 0A GUI Items: no layout (TODO in the spec)
           "s2c": Switch("opcode", {**SHARED, 0x04: DELETE})}
# The structs' `opcode` defaults: Create 03, Move 02, Texture 05, Metadata 06, Message 0a (GUI Items has none).
BY_STRUCT = {0x00: DISCONNECT, 0x01: PING, 0x03: CREATE, 0x02: MOVE, 0x04: DELETE, 0x05: TEXTURE, 0x06: METADATA,
             0x07: INTERACT, 0x08: GUI_OPEN, 0x09: GUI_INTERACT, 0x0A: MESSAGE, 0x10: WORLD_CHUNK, 0x11: SET_BLOCK,
             0x12: WORLD_EFFECT, 0x20: GAMEMODE}
STRUCT = {"c2s": Switch("opcode", BY_STRUCT), "s2c": Switch("opcode", BY_STRUCT)}

NAMES = {"heading": {**{code: p.label for code, p in SHARED.items()}, 0x04: "Object Delete / Texture Chunk",
                     0x0A: "GUI Items"},
         "struct": {code: p.label for code, p in BY_STRUCT.items()}}

PROTOCOL = StreamProtocol(
    "rutentoy", "Rutentoy Protocol",
    header=HEADER,
    bodies={"heading": HEADING, "struct": STRUCT},
    numbering_pref=("numbering", "Opcode numbering (heading or struct defaults)"),
    ports={"tcp.port": (PORT,), "sctp.port": (PORT,)},
    # server->client 04 is a texture chunk while the client's HAVETEX 0 exchange runs (until the last chunk)
    alternates={("heading", "s2c", 0x04): ("texture_exchange", "c2s")},
    sent_by={"create": "s2c", "interact": "c2s", "gui_interact": "c2s", "world_chunk": "s2c",
             "world_effect": "s2c", "gamemode": "s2c"},
    names=NAMES,
    final=("disconnect",),              # "the network socket is about to be closed"
)


def opcode_names() -> dict[int, str]:
    """The opcode's names (display, statistics): the heading's, and the struct numbering's where it differs."""
    heading, by_struct = NAMES["heading"], NAMES["struct"]
    out = {}
    for code in sorted({*heading, *by_struct}):
        h, s = heading.get(code), by_struct.get(code)
        out[code] = h if h == s or s is None else f"{h} (struct numbering: {s})" if h else f"(struct numbering: {s})"
    return out


# Set on the registered field only: the field itself flags no opcode as unknown (framing decides that).
PROTOCOL.fields["rutentoy.opcode"].values = opcode_names()
