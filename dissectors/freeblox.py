"""Freeblox: the game protocol of specs/freeblox-protocol.txt, one packet per WebSocket binary message.

Read this beside the spec: one line per spec line. Decisions (NOTES.md): all little-endian; StringNT ends at the
first NUL; UUID fields should hold a canonical UUID, JSON fields JSON, enum fields one of the listed values
(warnings otherwise); STREAM_ASSET's buffer runs to the end of the message; PLAYER_LIST pairs are `uuid:name`.
AUTH, PLAYER_MOVEMENT, PLAYER_CHAT and PLAYER_EVENT go client to server, KEEPALIVE both ways, the rest server to
client (`Sender`: roles learned from the first one-way packet, a warning for a packet sent the wrong way).
The spec lists the values of only one enum (Asset Type); the others (chat type, event, error type) are shown as
plain strings. Names learned from PLAYER_JOIN, PLAYER_LIST, PLAYER_QUIT and PLAYER_CHARACTER tell the Info
column who speaks (`PLAYER_CHAT alice: "hi"`).

No port: the heuristic takes a WebSocket connection from its first well-formed AUTH on (the client's first
message); or `-o freeblox.ws_port:PORT` (the plugin too), or `-d ws.port==PORT,freeblox` (protodump only: tshark
4.0's ws.port table has no Decode As).
"""
from ..engine.blocks_text import (EnumString, JsonString, Recall, Remember, Rest, Sender, SplitString, StringNT,
                                  UuidString)
from ..engine.blocks_vectors import Vec3, Vec3F
from ..engine.fields import F32LE, U8, U32LE, Array, Packet, Struct, Switch
from ..engine.message_protocol import MessageProtocol

PACKET_NAMES = {
    0: "AUTH", 1: "KEEPALIVE", 2: "STREAM_START", 3: "STREAM_ASSET", 4: "STREAM_OBJECT", 5: "STREAM_DESTROY",
    6: "STREAM_EVENT", 7: "STREAM_FINISH", 8: "STREAM_TRANSFORM", 9: "STREAM_CHAT", 10: "PLAYER_LIST",
    11: "PLAYER_JOIN", 12: "PLAYER_QUIT", 13: "PLAYER_CHARACTER", 14: "PLAYER_MOVEMENT", 15: "PLAYER_CHAT",
    16: "PLAYER_EVENT", 17: "ERROR",
}
ASSET_TYPES = ("Texture", "CubeTexture", "Mesh")

HEADER = Struct(
    "header", None,
    U8("id", "Packet ID", values=PACKET_NAMES),
)

CLIENT, SERVER = Sender("client"), Sender("server")


def Quat(name, label):
    return Vec3(name, label, F32LE, names=("x", "y", "z", "w"))


def learn_name():
    """Names by player UUID, for the Info column of later packets."""
    return Remember("names", key="player_uuid", value="player_name")


def speaker():
    """The name of the player a UUID names (learned earlier), for the Info column."""
    return Recall("player_name", "Player name", table="names", key="player_uuid")


PLAYER_ENTRY = Struct(
    "player", "Player",
    SplitString("entry", "Player", sep=":", parts=(("player_uuid", "Player UUID"), ("player_name", "Player name")),
                uuid_first=True),
    learn_name(),
    summary="Player {player_name} ({player_uuid})",
)

PACKETS = Switch("id", {
    0: Packet("auth", "AUTH", CLIENT,
              UuidString("player_uuid", "Player UUID"),
              StringNT("session_token", "Session token"),
              U8("client_version", "Client version"),
              info="{player_uuid} version {client_version}"),
    1: Packet("keepalive", "KEEPALIVE"),
    2: Packet("stream_start", "STREAM_START", SERVER,
              StringNT("world_name", "World name"),
              info='"{world_name}"'),
    3: Packet("stream_asset", "STREAM_ASSET", SERVER,
              StringNT("asset_path", "Asset path"),
              StringNT("asset_name", "Asset name"),
              EnumString("asset_type", "Asset type", ASSET_TYPES),
              Rest("buffer", "Buffer"),
              info="{asset_name} ({asset_type}, {buffer_size} bytes, {buffer_format})"),
    4: Packet("stream_object", "STREAM_OBJECT", SERVER,
              UuidString("object_uuid", "Object UUID"),
              UuidString("parent_uuid", "Parent UUID"),
              StringNT("object_type", "Object type"),
              JsonString("data", "Object serialized data"),
              info="{object_type} {object_uuid}"),
    5: Packet("stream_destroy", "STREAM_DESTROY", SERVER,
              UuidString("object_uuid", "Object UUID"),
              info="{object_uuid}"),
    6: Packet("stream_event", "STREAM_EVENT", SERVER,
              UuidString("object_uuid", "Object UUID"),
              StringNT("event", "Event"),
              JsonString("event_data", "Event data"),
              info="{event} {object_uuid}"),
    7: Packet("stream_finish", "STREAM_FINISH", SERVER,
              StringNT("world_name", "World name"),
              info='"{world_name}"'),
    8: Packet("stream_transform", "STREAM_TRANSFORM", SERVER,
              UuidString("object_uuid", "Object UUID"),
              Vec3F("position", "Position"),
              Quat("rotation", "Rotation"),
              Vec3F("linear_velocity", "Linear velocity"),
              Vec3F("angular_velocity", "Angular velocity"),
              info="{object_uuid}"),
    9: Packet("stream_chat", "STREAM_CHAT", SERVER,
              UuidString("player_uuid", "Player UUID"),
              speaker(),
              StringNT("chat_type", "Chat type"),
              StringNT("message", "Chat message"),
              info='{player_name}: "{message}"'),
    10: Packet("player_list", "PLAYER_LIST", SERVER,
               U32LE("count", "Player count"),
               Array("players", "Players", count="count", max_count=4096, item=PLAYER_ENTRY),
               info="{count} players"),
    11: Packet("player_join", "PLAYER_JOIN", SERVER,
               UuidString("player_uuid", "Player UUID"),
               StringNT("player_name", "Player name"),
               learn_name(),
               info="{player_name} ({player_uuid})"),
    12: Packet("player_quit", "PLAYER_QUIT", SERVER,
               UuidString("player_uuid", "Player UUID"),
               StringNT("player_name", "Player name"),
               StringNT("reason", "Quit reason"),
               learn_name(),
               info='{player_name}: "{reason}"'),
    13: Packet("player_character", "PLAYER_CHARACTER", SERVER,
               UuidString("player_uuid", "Player UUID"),
               StringNT("player_name", "Player name"),
               Vec3F("position", "Position"),
               Quat("rotation", "Rotation"),
               UuidString("character_uuid", "Character UUID"),
               JsonString("data", "Character data"),
               learn_name(),
               info="{player_name} character {character_uuid}"),
    14: Packet("player_movement", "PLAYER_MOVEMENT", CLIENT,
               UuidString("player_uuid", "Player UUID"),
               speaker(),
               Vec3F("linear_velocity", "Linear velocity"),
               Vec3F("look_at", "Look at"),
               U8("jump", "Jump", values={0: "False", 1: "True"}),
               info="{player_name} jump={jump}"),
    15: Packet("player_chat", "PLAYER_CHAT", CLIENT,
               UuidString("player_uuid", "Player UUID"),
               speaker(),
               StringNT("chat_type", "Chat type"),
               StringNT("message", "Chat message"),
               info='{player_name}: "{message}"'),
    16: Packet("player_event", "PLAYER_EVENT", CLIENT,
               UuidString("player_uuid", "Player UUID"),
               speaker(),
               UuidString("object_uuid", "Object UUID"),
               StringNT("event", "Event"),
               JsonString("event_data", "Event data"),
               info="{player_name} {event} {object_uuid}"),
    17: Packet("error", "ERROR", SERVER,
               StringNT("error_type", "Error type"),
               info="{error_type}"),
})

PROTOCOL = MessageProtocol(
    "freeblox", "Freeblox",
    header=HEADER,
    body={"current": PACKETS},
    info="",
    first=0,                    # heuristic: the connection's first message is a well-formed AUTH
)
