"""blank: the UDP protocol of the blank voxel game (specs/blank-protocol.txt, specs/blank-protocol-2015.txt).

Read this beside the spec: one line per spec line. Wire facts from NOTES.md: all little-endian, the 3 bytes after
the type are padding (never required to be zero), most packets are zero-padded to their maximum length.
"""
from ..engine.blocks_ack_history import AckHistory
from ..engine.blocks_chunks import Chunk
from ..engine.blocks_fixed_point import PackN
from ..engine.blocks_vectors import QuatSmallest3, Vec3, Vec3B, Vec3F, Vec3I, Vec3N, Vec3U
from ..engine.blocks_voxels import BlockMap, Summary
from ..engine.fields import (F32LE, I32LE, U8, U16LE, U32LE, Array, CString, Flag, Flags, Packet, Padding, Struct,
                             Switch, WhenPref)
from ..engine.protocol import Protocol

TAG = 0xFB1AB1AF

PACKET_NAMES = {
    0: "Ping", 1: "Login", 2: "Join", 3: "Part", 4: "Player Update", 5: "Spawn Entity", 6: "Despawn Entity",
    7: "Entity Update", 8: "Player Correction", 9: "Chunk Begin", 10: "Chunk Data", 11: "Block Update",
    12: "Message",
}

HEADER = Struct(
    "header", None,                                     # transparent: its fields are blank.tag, blank.seq, ...
    U32LE("tag", "Protocol tag", base="HEX", expect=TAG),
    U16LE("seq", "Sequence number"),
    U16LE("ack", "Sequence ack"),
    AckHistory("ack_history", "Previous acks", relative_to="ack"),
    U8("type", "Type", values=PACKET_NAMES),
    Padding("padding", 3),
)

# --- the current revision -----------------------------------------------------------------------------------------

ENTITY_STATE = Struct(
    "state", "Entity state",
    Vec3I("chunk_pos", "Chunk position"),
    Vec3U("block_pos", "Block position", scale=16.0),   # stored divided by 16
    Vec3F("velocity", "Velocity"),
    QuatSmallest3("orientation", "Orientation"),
    PackN("pitch", "Pitch", scale=90.0, unit="°"),      # stored divided by pi/2: shown in degrees
    PackN("yaw", "Yaw", scale=180.0, unit="°"),         # stored divided by pi
)

# Inside Entity Update the chunk position is a vec3b relative to the packet's base (33 bytes instead of 42).
UPDATE_STATE = Struct(
    "ustate", "Entity state",
    Vec3B("chunk_pos", "Chunk position (relative)", absolute_base="base", absolute="abs_chunk_pos"),
    *ENTITY_STATE.fields[1:],
)

# A chunk unpacks to 16x16x16 blocks of 4 bytes (type u16, face, turn), then 4096 light bytes, then 4 bytes:
# 20,484 bytes (NOTES.md). Summarised; every block by position (a row item per (z, y), index x + 16 (y + 16 z): the
# order of Rutentoy's, NOTES.md; blank's spec gives none) only with -o blank.block_map:TRUE (a session has hundreds).
CHUNK_CONTENT = Struct(
    "content", None,
    Summary("blocks", "Blocks", count=4096, stride=4, width=2, stats=("nonzero", "distinct")),
    Summary("light", "Light", count=4096, stride=1, width=1, stats=("nonzero", "max")),
    WhenPref("block_map", "Show every block of a chunk by position (x, y, z)",
             BlockMap("blocks", "Blocks", side=16, layout="u16", back=5 * 4096)),
)

ACTIONS = (Flag("primary", "Primary", 0x01), Flag("secondary", "Secondary", 0x02),
           Flag("tertiary", "Tertiary", 0x04))

PACKETS = Switch("type", {
    0: Packet("ping", "Ping"),
    1: Packet("login", "Login",
              CString("name", "Player name", max_size=32),
              info="{name}"),
    2: Packet("join", "Join",
              U32LE("entity_id", "Entity ID"),
              ENTITY_STATE,
              CString("world_name", "World name", max_size=32),
              info="entity={entity_id} world={world_name}"),
    3: Packet("part", "Part"),
    4: Packet("player_update", "Player Update",
              ENTITY_STATE,
              Vec3N("movement", "Movement input"),
              Flags(U8("actions", "Active actions", base="HEX"), ACTIONS),
              U8("slot", "Selected inventory slot"),
              info="slot={slot}"),
    5: Packet("spawn", "Spawn Entity",
              U32LE("entity_id", "Entity ID"),
              U32LE("model_id", "Model ID"),
              ENTITY_STATE,
              Vec3F("bbox_min", "Bounding box min"),
              Vec3F("bbox_max", "Bounding box max"),
              Flags(U32LE("flags", "Flags", base="HEX"), (Flag("world_collision", "World collision", 0x1),)),
              CString("name", "Entity name", max_size=32),
              info="entity={entity_id} model={model_id} {name}"),
    6: Packet("despawn", "Despawn Entity",
              U32LE("entity_id", "Entity ID"),
              info="entity={entity_id}"),
    7: Packet("entity_update", "Entity Update",
              I32LE("count", "Number of entities", check_range=(1, 12)),
              Vec3I("base", "Base for chunk coordinates"),
              Array("entities", "Entities", count="count", max_count=12, item=Struct(
                  "entity", "Entity",
                  U32LE("entity_id", "Entity ID"),
                  UPDATE_STATE,
                  summary="Entity {entity_id}")),
              info="count={count}"),
    8: Packet("correction", "Player Correction",
              U16LE("offending_seq", "Offending sequence number"),
              ENTITY_STATE,
              info="offending seq={offending_seq}"),
    9: Packet("chunk_begin", "Chunk Begin",
              U32LE("transmission_id", "Transmission ID"),
              Flags(U32LE("flags", "Flags", base="HEX"), (Flag("compressed", "Compressed", 0x1),)),
              Vec3I("coords", "Chunk coordinates"),
              U32LE("data_size", "Data size"),
              info="tid={transmission_id} size={data_size}", remember="transmission_id"),
    10: Packet("chunk_data", "Chunk Data",
               U32LE("transmission_id", "Transmission ID"),
               U32LE("offset", "Block offset"),
               U32LE("size", "Block size"),
               Chunk("data", "Data", begin="chunk_begin", key="transmission_id", at="offset", length="size",
                     total="data_size", compressed_flag=("flags", 0x1), content=CHUNK_CONTENT),
               info="tid={transmission_id} offset={offset} size={size}"),
    11: Packet("block_update", "Block Update",
               Vec3I("coords", "Chunk coordinates"),
               U32LE("count", "Number of blocks", check_range=(1, 78)),
               Array("blocks", "Blocks", count="count", max_count=78, item=Struct(
                   "block", "Block",
                   U16LE("index", "Block index"),
                   U32LE("data", "Block data", base="HEX"),
                   summary="Block {index}: {data}")),
               info="count={count}"),
    12: Packet("message", "Message",
               U8("msg_type", "Message type", values={0: "Notification", 1: "Chat"}),
               U32LE("referral", "Referral"),
               CString("text", "Message", max_size=450),
               info='"{text}"'),
})

# --- the 2015 revision ----------------------------------------------------------------------------------------

ENTITY_STATE_2015 = Struct(
    "state2015", "Entity state",
    Vec3I("chunk_pos", "Chunk position"),
    Vec3F("position", "Position"),
    Vec3F("velocity", "Velocity"),
    Vec3("orientation", "Orientation", F32LE, names=("x", "y", "z", "w")),
    Vec3F("angular_velocity", "Angular velocity"),
)

PACKETS_2015 = Switch("type", {
    0: PACKETS.cases[0],
    1: PACKETS.cases[1],
    2: Packet("join", "Join",
              U32LE("entity_id", "Entity ID"),
              ENTITY_STATE_2015,
              CString("world_name", "World name", max_size=32),
              info="entity={entity_id} world={world_name}"),
    3: PACKETS.cases[3],
    4: Packet("player_update", "Player Update", ENTITY_STATE_2015),
    5: Packet("spawn", "Spawn Entity",
              U32LE("entity_id", "Entity ID"),
              U32LE("skeleton_id", "Skeleton ID"),
              ENTITY_STATE_2015,
              Vec3F("bbox_min", "Bounding box min"),
              Vec3F("bbox_max", "Bounding box max"),
              Flags(U32LE("flags", "Flags", base="HEX"), (Flag("world_collision", "World collision", 0x1),)),
              CString("name", "Entity name", max_size=32),
              info="entity={entity_id} skeleton={skeleton_id} {name}"),
    6: PACKETS.cases[6],
    7: Packet("entity_update", "Entity Update",
              I32LE("count", "Number of entities", check_range=(1, 7)),
              Array("entities", "Entities", count="count", max_count=7, item=Struct(
                  "entity", "Entity",
                  U32LE("entity_id", "Entity ID"),
                  ENTITY_STATE_2015,
                  summary="Entity {entity_id}")),
              info="count={count}"),
    8: Packet("correction", "Player Correction",
              U16LE("offending_seq", "Offending sequence number"),
              ENTITY_STATE_2015,
              info="offending seq={offending_seq}"),
})

PROTOCOL = Protocol(
    "blank", "blank game protocol",
    header=HEADER,
    body={"current": PACKETS, "2015": PACKETS_2015},   # revisions: chosen by preference or by packet length
    revision_pref=("revision", "Protocol revision", "auto"),
    udp_ports=(12354,),
    heuristic=("tag", TAG),                            # any UDP port: the first 4 bytes are the tag
    sequence=("seq", 16),                              # per-direction lost / duplicate / out-of-order analysis
)
