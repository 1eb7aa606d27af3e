"""A protocol carried in a byte stream (TCP, SCTP) with no length field: each PDU's length follows from its
opcode, its direction (client->server or server->client tables) and, for a few opcodes, from state earlier
PDUs set (Rutentoy's 04 while a texture exchange runs). Several opcode numberings may be declared; a preference
picks one, `auto` recognises per connection the only one that frames the stream cleanly."""
from __future__ import annotations

from .blocks_cookies import ROLE
from .context import Ctx, Truncated
from .fields import Struct, Switch, format_template
from .lua_literals import lua_str
from .protocol import Protocol
from .streams import emit_stream_lua

RESYNC_SCAN = 65536        # bytes scanned for a resynchronisation point
NUMBERING_SCAN = 4096      # bytes framed ahead to recognise the opcode numbering (a bounded cost per PDU)
LAYOUT_MEMORY = 65536      # plugin: PDUs per connection whose first-pass layout is replayed (rt_stream_protocol)


def ports_of(direction: str) -> tuple[int, int]:
    """(source port, destination port) of a direction string "addr:port>addr:port" (IPv6 addresses too)."""
    src, _, dst = direction.partition(">")
    try:
        return int(src.rpartition(":")[2]), int(dst.rpartition(":")[2])
    except ValueError:
        return 0, 0


class StreamProtocol(Protocol):
    """bodies: numbering -> role -> Switch on the header's type field. alternates: (numbering, role, code) ->
    (flag, role whose case is used while conv flag `flag:<role>` is set). sent_by: packet name -> the only role
    that sends it (the other role gets an expert warning)."""
    own_state_only = False       # its messages set state its framing reads (numbering, flags): always dissected
    # the plugin rewrites a frame's joined Info after clearing the column fence (lua/rt_stream.lua stream_show):
    # with two messages or more, what was fenced before (TCP's analysis tags) is gone (engine.dispatch)
    joined_info_clears_fence = True

    def __init__(self, name, description, *, header: Struct, bodies: dict[str, dict[str, Switch]],
                 numbering_pref: tuple[str, str], ports: dict[str, tuple[int, ...]], alternates=None,
                 sent_by=None, names=None, final=()):
        flat = {f"{n}/{role}": sw for n, by_role in bodies.items() for role, sw in by_role.items()}
        super().__init__(name, description, header=header, body=flat, info="")
        self.numberings = list(bodies)
        self.numbering_pref = numbering_pref          # (pref name, description)
        self._numbering_key = f"{name}.{numbering_pref[0]}"     # its -o key
        self.ports = dict(ports)
        self.heuristics = {}
        self.server_ports = {p for ps in self.ports.values() for p in ps}
        self.alternates = alternates or {}
        self.sent_by = sent_by or {}
        self.names = names or {}                      # numbering -> {code: name} for the error texts
        self.header_size = self.header.size
        self.final = set(final)                       # packet names a direction sends nothing after
        self._roles: dict[str, str] = {}              # direction -> role (role() is pure)
        self._cases = {(n, role): self.body[f"{n}/{role}"].cases for n, by_role in bodies.items() for role in by_role}

    # --- registration -----------------------------------------------------------------------------------------
    def preferences(self):
        pname, desc = self.numbering_pref
        return {pname: (desc, "auto", ["auto", *self.numberings]), **self.table_prefs}

    def heuristic_match(self, payload: bytes) -> bool:
        return False

    # --- framing ----------------------------------------------------------------------------------------------
    def role(self, direction: str) -> str:
        # asked several times per PDU with the few directions of the open connections: remembered, bounded
        role = self._roles.get(direction)
        if role is None:
            if len(self._roles) >= 4096:
                self._roles.clear()
            role = self._roles[direction] = self._role(direction)
        return role

    def _role(self, direction: str) -> str:
        sport, dport = ports_of(direction)
        if sport in self.server_ports:
            return "s2c"
        if dport in self.server_ports:
            return "c2s"
        return "s2c" if sport < dport else "c2s"

    def packet_for(self, numbering: str, role: str, code: int, conv: dict):
        alt = self.alternates.get((numbering, role, code))
        if alt is not None and conv.get("flags", {}).get(f"{alt[0]}:{role}"):
            role = alt[1]
        cases = self._cases.get((numbering, role))
        if cases is None:         # not a numbering of ours: fail as the plain lookup does
            cases = self.body[f"{numbering}/{role}"].cases
        return cases.get(code)

    def frames_cleanly(self, numbering: str, role: str, data: bytes, pos: int, conv: dict) -> bool:
        """Every PDU starting in the next NUMBERING_SCAN bytes from pos has a layout in this numbering."""
        stop = min(len(data), pos + NUMBERING_SCAN)
        while pos < stop:
            packet = self.packet_for(numbering, role, data[pos], conv)
            if packet is None:
                return False
            pos += self.header_size + packet.size
        return True

    def numbering(self, data: bytes, pos: int, conv: dict, role: str, prefs: dict) -> str:
        pref = prefs.get(self._numbering_key, "auto") if prefs else "auto"
        if pref != "auto":
            conv["numbering"] = pref          # resync (which gets no prefs) reads it
            return pref
        chosen = conv.get("numbering")
        if chosen is None and data is not None:
            fits = [n for n in self.numberings if self.frames_cleanly(n, role, data, pos, conv)]
            if len(fits) == 1:
                chosen = conv["numbering"] = fits[0]
        return chosen or self.numberings[0]

    def pdu_length(self, data: bytes, pos: int, conv: dict, direction: str, prefs: dict) -> int:
        """> 0: the PDU at pos is that long; 0: need more bytes; -1: no layout for this opcode."""
        if pos >= len(data):
            return 0
        role = self.role(direction)
        packet = self.packet_for(self.numbering(data, pos, conv, role, prefs), role, data[pos], conv)
        if packet is None:
            return -1
        return self.header_size + packet.size

    def resync(self, data: bytes, pos: int, conv: dict, direction: str) -> int | None:
        """After a gap: the first position >= pos from which known PDUs chain to exactly the end of data (or,
        at pos itself, to a PDU running past it: segments often start at a PDU), with a closing PDU (`final`,
        e.g. Disconnect) only as the last one and not alone. None: no PDU start in data (skip it all)."""
        role, numbering = self.role(direction), conv.get("numbering") or self.numberings[0]
        size = min(len(data), pos + RESYNC_SCAN)
        state: dict[int, str | None] = {size: "end"}      # "end"/"exact": chains to size; "partial": past it
        for p in range(size - 1, pos - 1, -1):
            packet = self.packet_for(numbering, role, data[p], conv)
            state[p] = None
            if packet is None:
                continue
            after = p + self.header_size + packet.size
            if after > size:
                state[p] = "partial"
            elif after == size:
                state[p] = "exact"
            elif packet.name not in self.final and state[after] is not None:
                state[p] = "partial" if state[after] == "partial" else "exact"
        if state[pos] is not None:
            return pos
        # a lone closing PDU (a 00 byte) is too weak a sign of a PDU boundary
        return next((p for p in range(pos + 1, size) if state[p] == "exact"
                     and self.packet_for(numbering, role, data[p], conv).name not in self.final), None)

    def frame_error(self, data: bytes, pos: int, conv: dict, direction: str, prefs: dict) -> str:
        """Why the PDU at pos cannot be framed (pdu_length gave -1)."""
        role = self.role(direction)
        numbering = self.numbering(None, pos, conv, role, prefs)
        code = data[pos]
        name = self.names.get(numbering, {}).get(code)
        what = f"Opcode 0x{code:02x} ({name}) has no layout" if name else f"Unknown opcode 0x{code:02x}"
        return f"{what}: the rest of this direction cannot be framed"

    def emit_lua(self, gen, var: str) -> None:
        emit_lua_dissector(self, gen, var)

    # --- decode -------------------------------------------------------------------------------------------------
    def dissect(self, ctx: Ctx, prefs: dict):
        tree = ctx.tree
        role = self.role(ctx.direction)
        ctx.scopes[0][ROLE] = role
        try:
            self.header.decode(ctx, tree)
        except Truncated:
            return "Malformed (truncated header)"
        values = ctx.values
        code = values[self.type_field]
        numbering = self.numbering(memoryview(ctx.data)[:ctx.end], ctx.pos - self.header_size, ctx.conv, role, prefs)
        packet = self.packet_for(numbering, role, code, ctx.conv)
        if packet is None:
            ctx.expert(tree, "malformed", self.frame_error(ctx.data, ctx.pos - self.header_size, ctx.conv,
                                                          ctx.direction, prefs))
            self.rest(ctx, tree, self.data_info)
            return f"Unknown opcode 0x{code:02x}"
        sender = self.sent_by.get(packet.name)
        if sender is not None and sender != role:
            way = "client to server" if sender == "c2s" else "server to client"
            ctx.expert(tree, "unexpected", f"{packet.label} is sent {way} only")
        if ctx.demand is not None and ctx.demand <= self.header_abbrevs and not packet.stateful():
            return ""            # nothing reads the body, and it keeps no state (engine.demand)
        try:
            packet.decode(ctx, tree)
            if ctx.pos < ctx.end:
                self.trailing(ctx, tree)
        except Truncated:
            pass
        tree.label = f"{self.description}, {packet.label}"
        return lambda: self.info_text(packet, values, ctx.notes)

    def scan_pdu(self, ctx: Ctx, packet) -> None:
        """dissect() with nothing asked of the layer (engine.demand) on a PDU whose layout the framing found
        (`packet`): its values and the state its blocks keep, no items, no experts, no Info."""
        ctx.scopes[0][ROLE] = self.role(ctx.direction)
        try:
            self.header.scan(ctx)
            packet.scan(ctx)
        except Truncated:
            pass

    def info_text(self, packet, values: dict, notes: list[str]) -> str:
        info = packet.label
        if packet.info_template:
            info += " " + format_template(packet.info_template, values)
        return " ".join([info, *notes])


__all__ = ["StreamProtocol", "emit_lua_dissector", "ports_of"]


def emit_lua_dissector(p: StreamProtocol, gen, var: str) -> None:
    """The plugin's dissector for a stream protocol: its preference and its SPEC table (packet functions, sizes,
    numberings, roles) for the runtime's rt.stream_len / rt.stream_pdu / rt.stream_resync (lua/rt_stream_protocol.lua,
    the twins of pdu_length, dissect and resync); engine.streams writes the dissector and its registration."""
    w = gen.w
    pname, desc = p.numbering_pref
    choices = ["auto", *p.numberings]
    enum = ", ".join(f"{{ {i + 1}, {lua_str(n)}, {i} }}" for i, n in enumerate(choices))
    w(f"{var}.prefs.{pname} = Pref.enum({lua_str(desc)}, 0, {lua_str(desc)}, {{ {enum} }}, false)")
    header_fn = gen.struct_body(p.header)
    fns = {rev: {code: gen.struct_body(pkt) for code, pkt in sw.cases.items()} for rev, sw in p.body.items()}
    gen.flush()
    w(f"local SPEC = {lua_spec(p, gen, fns)}")
    w(f"SPEC.proto, SPEC.E, SPEC.header_fn = {var}, E, {header_fn}")
    w(f"SPEC.data, SPEC.trailing = F[{lua_str(p.data_info.abbrev)}], F[{lua_str(p.trailing_info.abbrev)}]")
    w(f"SPEC.choices = {{ {', '.join(map(lua_str, choices))} }}")
    w(f"SPEC.pref = function() return SPEC.choices[({var}.prefs.{pname} or 0) + 1] or \"auto\" end")
    for fn in ("len", "pdu", "resync"):
        w(f"local function {p.name}_{fn}(...) return rt.stream_{fn}(SPEC, ...) end")
    emit_stream_lua(gen, p, var, f"{p.name}_len", f"{p.name}_pdu", f"{p.name}_resync")
    gen.register_tables(p, var)
    w()


def lua_spec(p: StreamProtocol, gen, fns: dict) -> str:
    """The Lua table describing a stream protocol's framing (everything but the Lua-side objects)."""
    bodies = []
    for rev, by_code in fns.items():
        entries = []
        for code, fn in by_code.items():
            pkt = p.body[rev].cases[code]
            info = gen.template(pkt.info_template) if pkt.info_template else "nil"
            entries.append(f"[{code}] = {{ fn = {fn}, size = {pkt.size}, label = {lua_str(pkt.label)}, "
                           f"info = {info}, name = {lua_str(pkt.name)} }}")
        bodies.append(f"[{lua_str(rev)}] = {{ {', '.join(entries)} }}")
    alternates = ", ".join(f"[{lua_str(f'{n}|{r}|{code}')}] = {{ {lua_str(flag)}, {lua_str(role)} }}"
                           for (n, r, code), (flag, role) in p.alternates.items())
    names = ", ".join(f"[{lua_str(n)}] = {{ " + ", ".join(f"[{k}] = {lua_str(v)}" for k, v in t.items()) + " }"
                      for n, t in p.names.items())
    return (f"{{ header_size = {p.header_size}, numberings = {{ {', '.join(map(lua_str, p.numberings))} }}, "
            f"server_ports = {{ {', '.join(f'[{port}] = true' for port in sorted(p.server_ports))} }}, "
            f"alternates = {{ {alternates} }}, names = {{ {names} }}, "
            f"sent_by = {{ {', '.join(f'[{lua_str(k)}] = {lua_str(v)}' for k, v in p.sent_by.items())} }}, "
            f"final = {{ {', '.join(f'[{lua_str(k)}] = true' for k in sorted(p.final))} }}, "
            f"type_field = {lua_str(p.type_field)}, description = {lua_str(p.description)}, "
            f"scan = {RESYNC_SCAN}, numbering_scan = {NUMBERING_SCAN}, layout_memory = {LAYOUT_MEMORY}, "
            f"bodies = {{ {', '.join(bodies)} }} }}")
