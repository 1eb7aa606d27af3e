"""A table protocol carried one packet per message of a lower layer (WebSocket): the Protocol tables, plus a
heuristic that takes a connection from its first well-formed `first` packet on (Freeblox: the AUTH the client
sends first), and a port preference for the lower layer's dissector table (Wireshark's `ws.port`).

Wireshark's ws dissector tries its heuristic list on every message and nothing sticks, so the decision is kept
in the protocol's own conversation state (Python: the conv dict the dispatcher hands the heuristic; Lua: the
plugin's conversation table, replayed per message on re-dissection). The rule needs no direction (a heuristic
sees only the message): for a real session, whose first client message is the AUTH, it is "the connection whose
first client message is a well-formed AUTH"; messages before that AUTH are not taken.
"""
from __future__ import annotations

from .blocks_text import EnumString, JsonString, StringNT, UuidString, is_uuid, valid_utf8
from .jsonscan import JsonError, JsonParser
from .lua_literals import lua_str
from .protocol import Protocol


def well_formed(shaped, data: bytes, pos: int) -> bool:
    """Do the fields of `shaped` (see `shape`) cover data[pos:] exactly, every string valid (UTF-8, and its
    UUID/enum/JSON form)? The twin of rt.well_formed."""
    for kind, arg in shaped:
        if kind == "fixed":
            pos += arg
            if pos > len(data):
                return False
            continue
        nul = data.find(b"\0", pos)
        if nul < 0 or not valid_utf8(data[pos:nul]):
            return False
        value = data[pos:nul].decode()
        if (kind == "uuid" and not is_uuid(value)) or (kind == "enum" and value not in arg):
            return False
        if kind == "json":
            try:
                JsonParser(data[pos:nul]).parse()
            except JsonError:
                return False
        pos = nul + 1
    return pos == len(data)


def shape(fields) -> list[tuple[str, object]]:
    """The fields as (kind, argument): ("text"|"uuid"|"json", None), ("enum", values), ("fixed", size)."""
    out = []
    for f in fields:
        if isinstance(f, UuidString):
            out.append(("uuid", None))
        elif isinstance(f, EnumString):
            out.append(("enum", f.values))
        elif isinstance(f, StringNT):
            out.append(("json" if isinstance(f, JsonString) else "text", None))
        elif f.size == 0:
            continue                          # zero-width analysis fields (Sender, Remember, Recall)
        elif f.size is not None:
            out.append(("fixed", f.size))
        else:
            raise ValueError(f"{f.name}: a first-message heuristic needs strings and fixed fields only")
    return out


class MessageProtocol(Protocol):
    """`first`: the packet type code the first message of a connection must be, well formed, for the heuristic
    of list `heuristic_list` to take the connection. `port_pref`: (table, pref name) of a port preference."""

    def __init__(self, *args, first: int, heuristic_list: str = "ws", port_pref=("ws.port", "ws_port"), **kw):
        super().__init__(*args, **kw)
        self.first = first
        self.heuristic_list = heuristic_list
        self.heuristics = {heuristic_list: self.first_message_match}
        self.heuristic_wants_conv = True
        self.port_table, self.port_pref = port_pref
        self.port_prefs = {self.port_pref: self.port_table}
        if self.header.size != 1:
            raise ValueError("a first-message heuristic needs a one-byte type header")
        self.first_shape = shape(next(iter(self.body.values())).cases[first].fields)

    def preferences(self):
        prefs = super().preferences()
        prefs[self.port_pref] = (f"{self.port_table} port of {self.description} (0: none)", "0", [])
        return prefs

    def matches_first(self, payload: bytes) -> bool:
        return bool(payload) and payload[0] == self.first and well_formed(self.first_shape, payload, 1)

    def first_message_match(self, payload: bytes, conv: dict | None = None) -> bool:
        """The heuristic: a well-formed `first` packet takes the connection; every later message follows."""
        if conv is not None and conv.get("heuristic"):
            return True
        if not self.matches_first(payload):
            return False
        if conv is not None:
            conv["heuristic"] = True
        return True

    # --- the plugin ------------------------------------------------------------------------------------------------
    def emit_lua(self, gen, var: str) -> None:
        """The normal table dissector, then the heuristic on Wireshark's list and the port preference."""
        header_fn = gen.struct_body(self.header)
        packet_fns = {rev: {code: gen.struct_body(pkt) for code, pkt in sw.cases.items()}
                      for rev, sw in self.body.items()}
        gen.flush()
        gen.emit_dissect(self, var, header_fn, packet_fns, [])
        w = gen.w
        items = ", ".join(f"{{ {lua_str(k)}, {self.lua_arg(k, a)} }}" for k, a in self.first_shape)
        w(f"local FIRST_SHAPE = {{ {items} }}")
        # Messages come from the plugin's own WebSocket assembly (lua/rt_websocket.lua): Wireshark's hand-off
        # only says where in the frame's layers the next one goes.
        w("local registered_port = 0")
        with w.block(f"local function take_{self.name}(tvb, pinfo, tree)"):
            w(f"local conv = rt.conversation({lua_str(self.name)}, pinfo)")
            w("local c = { conv = conv, frame = pinfo.number, visited = rt.ws_visited(pinfo) }")
            w(f"if registered_port ~= 0 and (pinfo.src_port == registered_port or pinfo.dst_port == registered_port)"
              f" then conv.heuristic = true end")
            w(f"if not rt.taken(c, tvb, {self.first}, FIRST_SHAPE) then return false end")
            w(f"dissect_{self.name}(tvb, pinfo, tree)")
            w("return true")
        with w.block(f"local function heur_{self.name}(tvb, pinfo, tree)"):
            w("local mine, seen = rt.ws_next(pinfo, tvb)")
            w("if not seen then return false end     -- a pass without the fields (tshark -2): nothing yet")
            w(f"if mine == nil then return rt.conversation({lua_str(self.name)}, pinfo).heuristic == true end")
            w(f"return take_{self.name}(mine, pinfo, tree)")
        w(f"function {var}.dissector(tvb, pinfo, tree) heur_{self.name}(tvb, pinfo, tree); return tvb:len() end")
        w(f"rt.ws_consumer(take_{self.name})")
        # pcall: a Wireshark without this list (or table) must still load the rest of the plugin
        w(f"pcall(function() {var}:register_heuristic({lua_str(self.heuristic_list)}, heur_{self.name}) end)")
        w(f"{var}.prefs.{self.port_pref} = Pref.uint({lua_str(self.port_pref)}, 0, "
          f"{lua_str(self.preferences()[self.port_pref][0])})")
        with w.block(f"function {var}.prefs_changed()"):
            w(f"local ok, t = pcall(DissectorTable.get, {lua_str(self.port_table)})")
            w("if not ok or t == nil then return end")
            w(f"if registered_port ~= 0 then t:remove(registered_port, {var}) end")
            w(f"registered_port = {var}.prefs.{self.port_pref}")
            w(f"if registered_port ~= 0 then t:add(registered_port, {var}) end")
        w()

    @staticmethod
    def lua_arg(kind: str, arg) -> str:
        if kind == "fixed":
            return str(arg)
        if kind == "enum":
            return "{ " + ", ".join(f"[{lua_str(v)}] = true" for v in arg) + " }"
        return "nil"
