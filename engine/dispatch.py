"""Dissector dispatch: which game protocol a decoded frame carries (decode-as, then port table, then heuristics,
as tshark orders them), and the per-conversation state the game dissectors keep. Yields finished packets."""
from __future__ import annotations

from dataclasses import dataclass, field

from .context import Ctx
from .fields import BOOL_CHOICES
from .lifetime import PREFERENCES as ENGINE_PREFERENCES, Lifetimes
from .protocol import Protocol
from .strings import c_string
from .tree import MALFORMED, DataSource, ExpertInfo, Item, Layer

ILLEGAL_SEGMENTS = "[Illegal Segments]"     # reassemble.c's Info for a PDU whose segments' data conflict


class DispatchError(ValueError):
    """A bad -d / -o argument (the CLI turns it into one clear line): `preference` names the -o preference at
    fault, `protocol` the -d protocol."""

    def __init__(self, message: str, preference: str | None = None, protocol: str | None = None):
        super().__init__(message)
        self.preference, self.protocol = preference, protocol


@dataclass
class Settings:
    prefs: dict[str, str] = field(default_factory=dict)        # "blank.revision" -> "2015"
    decode_as: dict[tuple[str, int], str] = field(default_factory=dict)   # ("udp.port", 23456) -> "blank"


# a layer whose fields are named under another protocol (the pkt_comment layer holds frame.comment)
FIELD_ROOTS = {"pkt_comment": "frame"}
INFO_LIMIT = 4095   # bytes of the Info column (Wireshark's COL_MAX_INFO_LEN, its NUL aside)
MAX_DEPTH = 8      # layers one frame may stack through handoffs (a loop of heuristics must end)


def _with_top_items(games: list[Layer]) -> list[Layer]:
    """The game layers, each followed by the items its dissector put on the top level of the tree (Layer.after),
    each one a layer keyed by its field (a text item, as an expert tshark adds on the top level: by its label)."""
    for layer in games:              # (a loop, not any() over a generator: most frames have one layer or none)
        if layer.after:
            break
    else:
        return games
    out = []
    for layer in games:
        out.append(layer)
        out.extend(Layer(item.field.abbrev if item.field is not None else item.label, item, False)
                   for item in layer.after or ())
    return out


def _index_all(index: dict, layer: Layer) -> None:
    """Every item of a layer under its field's abbrev, expert items under theirs and tshark's pseudo-fields."""
    for item in layer.item.walk():
        f = item.field
        if f is not None and item is not layer.item:
            index.setdefault(f.abbrev, []).append(item)
        elif item.expert_info is not None:
            index.setdefault("_ws.expert", []).append(item)
            index.setdefault(item.expert_info.abbrev, []).append(item)
            if item.expert_info.group == MALFORMED:    # tshark's "_ws.malformed" item beside it
                index.setdefault("_ws.malformed", []).append(item)


def index_asked(index: dict, top, names) -> None:
    """The items under `top` (not itself) of the asked fields `names`, expert items by their abbrev
    (tcp.connection.syn), in tree order: a demand's index (Packet.index), and the fused machine's
    (output/fields_fused.py)."""
    for item in top.walk():
        f = item.field
        if f is not None:
            if f.abbrev in names and item is not top:
                index.setdefault(f.abbrev, []).append(item)
        elif item.expert_info is not None and item.expert_info.abbrev in names:
            index.setdefault(item.expert_info.abbrev, []).append(item)


class Packet:
    """One frame after dissection: the capture frame, the standard-layer decode, the game layers if any
    (several: ENet under Iceball, several PDUs of one TCP segment)."""

    __slots__ = ("frame", "decoded", "games", "_info", "protocol", "sources", "_index", "demand", "tries",
                 "postdissected")

    def __init__(self, frame, decoded, games: list[Layer], info, protocol: str, sources, demand=None):
        self.frame, self.decoded, self.games = frame, decoded, games
        self._info, self.protocol, self.sources = info, protocol, sources
        self._index = None
        self.demand = demand          # engine.demand.Demand: index() holds only the layers it reads
        # calls of the plugin that made no layer: its heuristics tried before the one that took a payload, or in
        # vain, and a stream dissector that kept a segment's bytes: (the game layer made next or None, offset of
        # the payload in its data source, their names, and for a heuristic list's lookup (list, winner or None,
        # calls) else None); -T pdml, ek and json show each call (wslua's fake item: output/lua_fakes.py)
        self.tries = None
        # how many layers at the end of `games` the plugin's postdissector shows (Stack.run_late): wslua's fake
        # item of that call comes before the first of them, not last
        self.postdissected = 0

    @property
    def game(self) -> Layer | None:
        """The first game layer (the outermost), or None."""
        return self.games[0] if self.games else None

    @property
    def info(self) -> str:
        """The Info column (made on first use: a dissector may hand over a function that makes it)."""
        info = self._info
        if callable(info):
            info = self._info = info()
        if "\0" in info:                 # (Wireshark's column is a C string: a wire NUL ends it)
            info = self._info = c_string(info)
        return info

    def append_info(self, text: str) -> None:
        """Add to the Info column after the dissection (a tap's col_append_str: -z proto,colinfo), which holds at
        most COL_MAX_INFO_LEN - 1 bytes (4095; a character cut there is dropped)."""
        info = (self.info + text).encode()
        if len(info) > INFO_LIMIT:
            info = info[:INFO_LIMIT]
        self._info = info.decode("utf-8", "ignore")

    @property
    def number(self) -> int:
        return self.frame.number

    def layers(self) -> list[Layer]:
        std = self.decoded.layers()
        marks = getattr(self.decoded, "chunk_marks", None)
        if not marks or len(marks) < 2:
            return [*std, *_with_top_items(self.games)]
        # SCTP: tshark shows each DATA chunk after the first in a new "sctp" item that follows the layers of the
        # chunk before it (capture.sctp builds those continuation layers: they carry no header)
        first = next(i for i, layer in enumerate(std) if layer.proto == "sctp")
        conts = [layer for layer in std[first + 1:] if layer.proto == "sctp"]
        out = [layer for layer in std if layer not in conts]
        out, rest = out[:first + 1], out[first + 1:]
        games, at = self.games, 0
        for mark, cont in zip(marks[1:], conts):
            out.extend(games[at:mark])
            out.append(cont)
            at = mark
        return [*out, *games[at:], *rest]

    def index(self) -> dict[str, list]:
        """Every item of every layer by field abbrev, in tree order; protocols (layer names) map to their top
        item. What display filters, -T fields and the Python API (`packet["blank.seq"]`) read. With a demand
        (engine.demand), only the asked fields, from the layers they belong to."""
        if self._index is None:
            index: dict[str, list] = {}
            demand = self.demand
            if demand is None:
                for layer in self.layers():
                    index.setdefault(layer.proto, []).append(layer.item)
                    _index_all(index, layer)
            else:
                names = demand.names
                for layer in [*self.decoded.layers_for(demand.roots, names), *_with_top_items(self.games)]:
                    index.setdefault(layer.proto, []).append(layer.item)
                    root = FIELD_ROOTS.get(layer.proto) or layer.proto.split(".")[0]
                    # else only its presence is read (an ICMP error nests the quoted IP, UDP, TCP: always walked)
                    if root in demand.roots or root in ("icmp", "icmpv6"):
                        index_asked(index, layer.item, names)
            self._index = index
        return self._index

    def values(self, abbrev: str) -> list:
        """The values of a field in this packet (all occurrences, in tree order)."""
        return [item.value for item in self.index().get(abbrev, ())]

    def __getitem__(self, abbrev: str):
        """The first value of a field: packet["blank.seq"]; KeyError when the packet has none."""
        items = self.index().get(abbrev)
        if not items:
            raise KeyError(abbrev)
        return items[0].value

    def __contains__(self, abbrev: str) -> bool:
        return abbrev in self.index()


class PlainPacket(Packet):
    """A frame with its standard layers only (Dispatcher.standard_only): made per frame at full speed."""

    __slots__ = ()

    def __init__(self, frame, decoded):
        self.frame, self.decoded, self.games, self.sources, self._index = frame, decoded, [], [], None
        if decoded.defragmented is not None:      # (Stack's, without a game layer)
            self.sources = [DataSource("Frame", frame.data),
                            DataSource(decoded.reassembled_source(), decoded.defragmented[1])]
        self._info, self.demand, self.tries, self.postdissected = None, None, None, 0

    @property
    def protocol(self) -> str:
        d = self.decoded
        return (d.protocols[-1] if d.protocols else "frame").upper()

    @property
    def info(self) -> str:
        return self.decoded.plain_info()


class _QuotedDatagram:
    """The UDP datagram an ICMP error quotes, as Stack and udp_protocol read a decode."""

    __slots__ = ("src", "sport", "dst", "dport", "payload", "payload_offset")
    transport = "udp"
    defragmented = None

    def __init__(self, src, sport, dst, dport, payload, payload_offset: int):
        self.src, self.sport, self.dst, self.dport, self.payload = src, sport, dst, dport, payload
        self.payload_offset = payload_offset       # where the quoted payload starts in the frame


class Stack:
    """The game layers of one frame, built outwards: the first one chosen from the transport, each further one
    by a handoff from the layer below it (engine.context.Ctx.handoff)."""

    __slots__ = ("dispatcher", "frame", "d", "layers", "infos", "sources", "endpoints", "depth", "called", "pair",
                 "ended", "now", "dropped", "notes", "tries", "late", "silent", "round_at",
                 "late_at", "fragmented")

    def __init__(self, dispatcher: Dispatcher, frame, d):
        self.dispatcher, self.frame, self.d = dispatcher, frame, d
        self.layers: list[Layer] = []
        self.called: list[str] = []      # protocols called that made no layer (still named in frame.protocols)
        self.infos: list[tuple[str, object]] = []      # (protocol, info or a function making it), per layer
        self.sources: list[DataSource] = [DataSource("Frame", frame.data)]
        if d.defragmented is not None:   # (capture.layers.REASSEMBLED_SOURCE)
            self.sources.append(DataSource(d.reassembled_source(), d.defragmented[1]))
        a, b = self.endpoints = (f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}")
        self.pair = (a, b) if a < b else (b, a)
        self.depth = 0
        self.ended = False               # a layer saw the conversation end (Ctx.end_conversation)
        self.now = 0.0                   # the frame's capture time (seconds)
        self.dropped = False             # this frame's pair was freed while it was being dissected (state budget)
        self.notes: list = []            # (protocol name, note) for the first layer of that protocol
        # (layers made before, payload offset, Lua calls that made no layer, the heuristic list's lookup or None)
        self.tries: list[tuple[int, int, list[str], tuple | None]] = []
        self.late: list[tuple] = []      # hand-offs kept for the end of the frame (Ctx.handoff(late=True))
        self.silent: list[tuple[int, str]] = []   # (layers made before, protocol) called that showed nothing
        # the first layer of desegment_tcp's second round (the rest of a segment that completed a PDU of tshark's
        # own reassembly): the columns are fenced there (engine.streams), else None
        self.round_at: int | None = None
        self.late_at: int | None = None  # the first layer the postdissector made (run_late), if any
        # pinfo->fragmented as a dissector left it for the rest of the frame (websocket's continuation frames)
        self.fragmented = False

    def lookup(self, table: str, keys, payload: bytes, offset: int):
        """Dispatcher.lookup, noting the Lua heuristics it tried in vain on the payload at `offset`."""
        tried: list = []
        proto = self.dispatcher.lookup(table, keys, payload, self.conversation, tried)
        if tried:                   # the heuristic list was tried: its Lua calls, and what -j replays
            name, won, vain = tried[0]
            self.tries.append((len(self.layers), offset, vain, (name, won, len(vain))))
        return proto

    @property
    def direction(self) -> str:
        return f"{self.endpoints[0]}>{self.endpoints[1]}"

    def conversation(self, proto: Protocol, extra=()) -> dict:
        """The per-conversation state of `proto` between this frame's endpoints (either direction)."""
        key = (proto.name, *self.pair, *extra)
        conversations = self.dispatcher.conversations
        conv = conversations.get(key)
        if conv is None:
            conv = conversations[key] = {}
            self.dispatcher.pair_keys.setdefault(self.pair, []).append(key)
            if self.dropped:             # freed earlier in this frame: live again, with the note (rt.conversation)
                self.dropped = False
                note = self.dispatcher.lifetimes.touch(self.pair, self.now)
                if note is not None:
                    self.notes.append((proto.name, note))
        return conv

    def dissect(self, proto: Protocol, data: bytes, start: int, end: int, source: int = 0,
                direction: str | None = None, meta: dict | None = None, conv: dict | None = None) -> Layer:
        """Decode data[start:end] with `proto` as this frame's next layer. Never raises for any content."""
        tree = Item(proto.info, proto.description, start, end - start, proto.description, False, source)
        layer = Layer(proto.name, tree)
        self.layers.append(layer)
        demand = self.dispatcher.demand
        asked = None if demand is None else demand.of(proto.name)
        if asked is not None and not asked and getattr(proto, "own_state_only", False):
            self.infos.append((proto.name, ""))     # nothing reads this layer but its presence (engine.demand)
            return layer
        ctx = Ctx(data, start, end, tree, proto, self.conversation(proto) if conv is None else conv,
                  direction or self.direction, self.frame.number, self.sources)
        ctx.source, ctx.stack, ctx.prefs = source, self, self.dispatcher.settings.prefs
        ns = self.frame.ts_ns
        ctx.time = ns // 1_000_000_000 + (ns % 1_000_000_000) / 1e9
        if meta:
            ctx.meta = meta
        ctx.demand = asked
        if asked is not None:       # (nothing asked but the layer's presence: no items, only its state)
            ctx.asked = demand.plain(proto, asked) if asked else asked
        slot = len(self.infos)               # infos in layer order: the layers this one hands up come after it
        self.infos.append((proto.name, ""))
        self.depth += 1
        try:
            info = proto.dissect(ctx, self.dispatcher.settings.prefs)
        except Exception as exc:  # noqa: BLE001 - a dissector bug must not lose the rest of the capture
            ctx.expert(tree, "malformed", f"Dissector error: {exc!r}")
            info = "Dissector error"
        finally:
            self.depth -= 1
            ctx.stack = None     # an Info closure may keep ctx: no ctx -> stack -> infos -> closure cycle
        self.infos[slot] = (proto.name, info)
        return layer

    def handoff(self, table: str, keys, data: bytes, start: int, end: int, source: int, direction: str,
                meta: dict) -> str | None:
        if self.depth >= MAX_DEPTH or start >= end:
            return None
        proto = self.lookup(table, keys, data[start:end], start)
        if proto is None:
            return None
        self.dissect(proto, data, start, end, source, direction, meta)
        return proto.name

    def call_silently(self, table: str, keys, data: bytes, start: int, end: int) -> str | None:
        """The protocol the hand-off would go to is called but shows nothing (the plugin's WebSocket heuristic
        given a message it could not assemble claims it for its connection): named in frame.protocols only."""
        if self.depth >= MAX_DEPTH or start >= end:
            return None
        proto = self.lookup(table, keys, data[start:end], start)
        if proto is not None:
            self.silent.append((len(self.layers), proto.name))
            self.tries.append((len(self.layers), 0, [proto.name], None))     # its call (wslua's _ws.lua.fake)
        return None if proto is None else proto.name

    def run_late(self) -> None:
        """The hand-offs kept for the end of the frame, as the plugin's postdissector shows the messages
        Wireshark did not hand up: after every other layer, and not in frame.protocols (a postdissector's layers
        are not listed there)."""
        late, self.late = self.late, []
        for i, (table, keys, data, start, end, source, direction, meta) in enumerate(late):
            if isinstance(source, str):    # a buffer of its own, made when shown (all of them before the first)
                self.sources.append(DataSource(source, data))
                late[i] = (table, keys, data, start, end, len(self.sources) - 1, direction, meta)
        for table, keys, data, start, end, source, direction, meta in late:
            # (the postdissector offers the message to the protocols' own functions: no Lua call of its own to note)
            proto = self.dispatcher.lookup(table, keys, data[start:end], self.conversation) if start < end else None
            if proto is not None:
                self.dissect(proto, data, start, end, source, direction, meta).listed = False

    def packet(self) -> Packet:
        before = len(self.layers)
        if self.late:
            self.late_at = before
            self.run_late()
        packet = self.with_tries(self._packet())
        packet.postdissected = len(self.layers) - before
        return packet

    def _columns(self, layers: list, infos: list) -> tuple:
        """(the protocol that sets the columns, its Info or a function making it, how many messages that Info
        joins) of these layers."""
        # infos[i] belongs to layers[i]; a layer may have renamed itself (websocket's upgrade shows as http)
        at = len(layers) - 1
        while at > 0 and layers[at].proto in ("data", "data-text-lines"):
            at -= 1                                   # tshark's data dissector leaves the columns as they were
        last = layers[at].proto
        infos = [info for layer, (_, info) in zip(layers, infos) if layer.proto == last]
        if len(infos) > 1 and getattr(self.dispatcher.protocols.get(last), "info_afresh", False):
            infos = infos[-1:]          # a dissector that sets its column afresh at each PDU: the last one's
        # several messages (also over several SCTP DATA chunks: the plugin clears SCTP's column fence and rewrites
        # the whole column at each of its calls, lua/rt_stream.lua stream_show) joined with ", "
        joined = infos[0] if len(infos) == 1 else (lambda: ", ".join(i() if callable(i) else i for i in infos))
        return last, joined, len(infos)

    def with_tries(self, packet: Packet) -> Packet:
        """The packet, with the plugin calls that made no layer (Packet.tries)."""
        if self.tries:
            layers = self.layers
            packet.tries = [(layers[i] if i < len(layers) else None, at, names, heard)
                            for i, at, names, heard in self.tries]
        return packet

    def _packet(self) -> Packet:
        d = self.d
        if not self.layers:
            protocol = d.protocol_column()
            d.protocols.extend(self.called)
            if not self.called:
                d.no_dissector()             # tshark's data layer for a payload nobody took
            # (a datagram reassembled from IP fragments is a data source of its own, game layer or not)
            sources = self.sources if d.defragmented is not None else []
            return Packet(self.frame, d, [], d.plain_info, protocol, sources, self.dispatcher.demand)
        protos = self.dispatcher.protocols
        silent = self.silent
        for i, layer in enumerate(self.layers):       # frame.protocols: "eth:...:udp:enet:iceball"
            if silent:
                d.protocols.extend(name for at, name in silent if at == i)
            if layer.listed:
                d.protocols.extend(getattr(protos.get(layer.proto), "listed_after", ()))   # a parent it runs under
                d.protocols.append(layer.proto)
                d.protocols.extend(layer.nested)
        if silent:
            d.protocols.extend(name for at, name in silent if at >= len(self.layers))
        split = self.round_at
        # reassemble.c found a segment's data conflicting with the bytes it overlaps: show_fragment_errs_in_col
        # rewrites the Info column (after TCP's fence) once the reassembled PDU is dissected
        illegal = any(any(entry[3]) for entry in d.reassembled or ())
        if split and split < len(self.layers):        # (a second round that made no layer changes nothing)
            # desegment_tcp's second round: the Info column fenced after the first round's text, the Protocol
            # column no longer writable; the second round writes after the fence the Info the plugin joins for the
            # whole frame (the first round's messages again, then its own: lua/rt_websocket.lua rt.ws_info)
            d.round_at = split        # (io,phs: TCP's reassembled-segments item follows the first round's layers)
            last, first_info, messages = self._columns(self.layers[:split], self.infos[:split])
            late_last, second, _ = self._columns(self.layers, self.infos)
            if self.late_at is not None and self.late_at < len(self.layers):
                last = late_last      # desegment_tcp made it writable again before the postdissector wrote it
            if illegal:
                first_info = ILLEGAL_SEGMENTS
            info = (lambda a=first_info, b=second: (a() if callable(a) else a) + (b() if callable(b) else b))
        else:
            last, info, messages = self._columns(self.layers, self.infos)
            if illegal:
                info = ILLEGAL_SEGMENTS
        demand = self.dispatcher.demand       # a run asking for some fields reads no Info (engine.demand)
        prefix = d.info_prefix() if demand is None else ""   # the standard layers' tags before any Info
        if d.segment_head and demand is None:
            # desegment_tcp's first round stored the segment's first bytes in a PDU still incomplete: TCP's own
            # Info and its tag, then the fence, and the Protocol column no longer writable (but for the postdissector)
            prefix = d.plain_info()
        if messages > 1 and getattr(protos.get(last), "joined_info_clears_fence", False):
            prefix = ""
        if d.transport == "sctp" and demand is None and len(d.chunks or ()) > 1:
            before, after = d.around_data()          # SCTP's chunks before and after the DATA ones
            if before and messages == 1:      # (the plugin clears the fence for a second message: gone then)
                prefix += before
            if after:
                info = (lambda inner=info: (inner() if callable(inner) else inner) + after)
        if prefix:
            info = (lambda inner=info: prefix + (inner() if callable(inner) else inner))
        column = self.dispatcher.column_names.get(last, last)
        if d.segment_head and (self.late_at is None or self.late_at >= len(self.layers)):
            column = "TCP"
        return Packet(self.frame, d, self.layers, info, column, self.sources, demand)


def settle(entries: list, won: int | None) -> list[str]:
    """A heuristic list's entries were tried in order up to `won`, the one that took the payload (None: none
    did): the names of the plugin's heuristics that ran in vain before it (wslua adds its fake item for each
    call; Wireshark's own, emulated, add none), and the winner moves to the front of its list (packet.c). One
    process's Dispatcher.lookup and the -j parent's replay of the workers' lookups (output/lua_fakes.py) both
    go through here, so the two orders cannot drift apart."""
    vain = [p.name for p, _ in entries[:won] if getattr(p, "lua", True) is not False]
    if won:
        entries.insert(0, entries.pop(won))
    return vain


class Dispatcher:
    def __init__(self, protocols: list[Protocol], settings: Settings | None = None):
        self.protocols = {p.name: p for p in protocols}
        self.settings = settings or Settings()
        # Wireshark's dissector tables and heuristic lists, filled from each protocol's registration.
        self.tables: dict[str, dict] = {}
        self.heuristic_lists: dict[str, list] = {}
        for p in protocols:
            for table, keys in getattr(p, "ports", {}).items():
                for key in keys:
                    self.tables.setdefault(table, {}).setdefault(key, p)
            for name, match in getattr(p, "heuristics", {}).items():
                entries = self.heuristic_lists.setdefault(name, [])
                # Wireshark prepends each registration: the plugin's (registered after every C dissector, in
                # table order) come first, the last registered first; Wireshark's own (emulated) after them
                if getattr(p, "lua", True) is not False:
                    entries.insert(0, (p, match))
                else:
                    entries.append((p, match))
        for p in protocols:          # a port preference (-o freeblox.ws_port:8765) registers its key first
            for pname, table in getattr(p, "port_prefs", {}).items():
                value = self.settings.prefs.get(f"{p.name}.{pname}", "")
                if value.isdigit() and int(value):
                    self.tables.setdefault(table, {})[int(value)] = p
        # the Protocol column of a layer named otherwise (tshark's C dissectors: "http" -> "HTTP")
        self.column_names = {k: v for p in protocols for k, v in getattr(p, "column_names", {}).items()}
        self.conversations: dict[tuple, dict] = {}
        self.pair_keys: dict[tuple, list] = {}      # (a, b) -> its keys in conversations (freed together)
        self.ended_hooks: list = []     # called with (a, b) when an ended conversation is freed (protodump.session)
        self.lifetimes = Lifetimes(self._number_pref("conversation_timeout", float),
                                   self._number_pref("max_conversations", int))
        from ..reassembly.budget import PENDING, STATE
        PENDING.limit = self._number_pref("reassembly_budget", int)
        STATE.limit = self._number_pref("state_budget", int)
        self.stats_tree_nodes = self._number_pref("stats_tree_nodes", int)
        self.claimed: dict[tuple, Protocol] = {}   # UDP conversations a heuristic claimed (pinfo.conversation)
        self.streams = None            # engine.streams.Streams, made on the first TCP/SCTP frame
        # Nothing reads the game layers (statistics of addresses and lengths only): frames get their standard
        # layers and no game dissection at all (the caller decides: cli/read_cmd.py, analysis.stats.run)
        self.standard_only = False
        # What the run reads of the game layers (engine.demand.Demand); None: every tree is built in full
        self.demand = None
        # -2 (cli/two_pass_opts.py): the first pass records, for each TCP segment of a PDU that a later frame
        # completes, that frame (engine.streams); the second pass shows it ("[Reassembled PDU in frame: N]")
        self.reassembled_in: dict[int, int] | None = None
        self.reassembled_learnt: dict[int, int] | None = None
        # ... and for each ICMP echo request, its reply's frame (capture.conversations.UdpTable.replies)
        self.echo_replies: dict[int, int] | None = None
        self.echo_learnt: dict[int, int] | None = None
        # -2's first pass: the keys of what a conversation learns for the second (cli/two_pass_opts.py LEARNT),
        # kept from the conversations freed before the end of the file (`learnt_kept`)
        self.keeps_learnt: tuple[str, ...] = ()
        self.learnt_kept: list[dict] = []
        self.check_settings()

    def check_settings(self) -> None:
        for (table, key), name in self.settings.decode_as.items():
            if name not in self.protocols:
                raise DispatchError(f"decode-as: unknown protocol {name!r} (known: {', '.join(self.protocols)})",
                                    protocol=name)
        for key, value in self.settings.prefs.items():
            proto, _, pref = key.partition(".")
            if proto == "protodump" and pref in ENGINE_PREFERENCES:
                continue
            p = self.protocols.get(proto)
            if p is None or pref not in p.preferences():
                raise DispatchError(f"unknown preference {key!r}", preference=key)
            choices = p.preferences()[pref][2]
            if choices == BOOL_CHOICES and value.upper() in BOOL_CHOICES:      # TRUE/FALSE in any case, as tshark
                continue
            if choices and value not in choices:
                raise DispatchError(f"preference {key}: {value!r} is not one of {', '.join(choices)}", preference=key)

    def _number_pref(self, name: str, kind):
        """An engine preference (-o protodump.<name>:<value>, engine.lifetime.PREFERENCES)."""
        text = self.settings.prefs.get(f"protodump.{name}", ENGINE_PREFERENCES[name][1])
        try:
            value = kind(text)
        except ValueError:
            raise DispatchError(f"preference protodump.{name}: {text!r} is not a number") from None
        if value <= 0:
            raise DispatchError(f"preference protodump.{name}: {text!r} must be positive")
        return value

    def forget(self, pair) -> None:
        """Free every piece of state the conversation between `pair`'s endpoints holds."""
        for key in self.pair_keys.pop(pair, ()):
            conv = self.conversations.pop(key, None)
            if self.keeps_learnt and conv:
                learnt = {k: conv[k] for k in self.keeps_learnt if conv.get(k)}
                if learnt:
                    self.learnt_kept.append(learnt)
        self.lifetimes.release(pair)
        self.claimed.pop(pair, None)
        if self.streams is not None:
            self.streams.connections.pop(pair, None)

    def lookup(self, table: str, keys, payload: bytes, conv_of=None, tried: list | None = None) -> Protocol | None:
        """The protocol for a payload: decode-as (table, key), then the table's registrations, then the
        heuristic list named by the table's first part ("udp.port" -> "udp"). A protocol whose heuristic decides
        per connection (`heuristic_wants_conv`) is given its conversation dict: conv_of(proto) -> dict. When the
        heuristic list was tried, `tried` gets (its name, the protocol that took the payload or None, the names of
        the plugin's heuristics that said no before: wslua adds a fake item for each call)."""
        decode_as = self.settings.decode_as
        if decode_as:
            for key in keys:
                name = decode_as.get((table, key))
                if name:
                    return self.protocols[name]
        registered = self.tables.get(table)
        if registered:
            for key in keys:
                p = registered.get(key)
                if p is not None:
                    return p
        name = table.split(".")[0]
        entries = self.heuristic_lists.get(name)
        if not entries:
            return None
        won = None
        for i, (p, match) in enumerate(entries):
            if getattr(p, "heuristic_wants_conv", False) and conv_of is not None:
                took = match(payload, conv_of(p))
            else:
                took = match(payload)
            if took:
                won = i
                break
        vain = settle(entries, won)
        if tried is not None:
            tried.append((name, entries[0][0].name if won is not None else None, vain))
        return entries[0][0] if won is not None else None

    def dissect(self, frame, d) -> Packet:
        """Dissect one frame's game layers (if any). Never raises for any packet content."""
        if self.standard_only:
            return PlainPacket(frame, d)
        if d.icmp is not None and d.icmp.quoted_udp is not None and d.icmp.data_at is not None:
            return self._quoted(frame, d)
        if d.icmp is not None and d.icmp.quoted_tcp is not None and d.protocols and d.protocols[-1] == "data":
            return self._quoted_segment(frame, d)
        stack = Stack(self, frame, d)
        if d.transport not in ("udp", "tcp", "sctp"):
            return stack.packet()
        lifetimes, ns = self.lifetimes, frame.ts_ns
        now = ns // 1_000_000_000 + (ns % 1_000_000_000) / 1e9
        t = d.tcp
        if t is not None and t.flags and t.flags[0] == "reused_ports":
            # a new TCP connection on the same endpoints (capture.tcp_analysis): the earlier one's state goes now,
            # and its end no longer frees the pair (the Lua twin: rt.conversation on a new tcp.stream)
            lifetimes.restart(stack.pair)
            self.forget(stack.pair)
        if lifetimes.due(now):
            for pair in lifetimes.expired(now):     # this frame's own conversation too: its state is stale
                self.forget(pair)
                if lifetimes.ended_last:
                    for hook in self.ended_hooks:
                        hook(pair)
        note = lifetimes.touch(stack.pair, now)
        stack.now = now
        if d.transport == "udp":
            if d.payload:                 # tshark hands no empty payload to a sub-dissector
                proto = self.udp_protocol(stack, d)
                if proto is not None:
                    start = d.payload_offset
                    if d.defragmented is None:
                        stack.dissect(proto, frame.data, start, start + len(d.payload))
                    else:                 # a datagram reassembled from fragments: its own data source
                        stack.dissect(proto, d.defragmented[1], start, start + len(d.payload), 1)
        elif d.transport in ("tcp", "sctp") and not (d.problems and d.problems[-1][1].abbrev == "_ws.malformed.expert"):
            if self.streams is None:     # (an exception in the TCP header: tshark hands its payload to no one)
                from .streams import Streams
                self.streams = Streams(self)
            self.streams.dissect(stack, d)
        if note is not None and stack.layers:
            layer = stack.layers[0]
            proto = self.protocols.get(layer.proto)
            if proto is not None and "sequence" in proto.experts:
                group, severity = proto.experts["sequence"]
                layer.item.expert(ExpertInfo(f"{proto.name}.sequence", group, severity, note))
        for name, text in stack.notes:          # a conversation freed by a charge during this frame (charge())
            layer = next((layer for layer in stack.layers if layer.proto == name), None)
            proto = self.protocols.get(name)
            if layer is not None and "sequence" in proto.experts:
                group, severity = proto.experts["sequence"]
                layer.item.expert(ExpertInfo(f"{name}.sequence", group, severity, text))
        if stack.ended and lifetimes.tracks(stack.pair):
            lifetimes.end(stack.pair, now)
        return stack.packet()

    def charge(self, stack: Stack, n: int) -> None:
        """The frame's conversation now holds n more bytes of heavy state (an inflate window: Ctx.charge_state).
        Over protodump.state_budget, the oldest conversations are freed at once, this one too if it is the
        oldest, as the plugin's rt.state_charge does: a layer after this one in the frame starts it again, and
        notes it."""
        lifetimes = self.lifetimes
        if not lifetimes.charge(stack.pair, n):
            return
        for pair in lifetimes.over_budget():
            self.forget(pair)
            if pair == stack.pair:
                stack.dropped = True


    def _quoted(self, frame, d) -> Packet:
        """An ICMP error quoting a UDP datagram: tshark hands the quoted payload to that datagram's dissector, as
        a layer after the ICMP one; the Info and Protocol columns stay ICMP's (capture.icmp)."""
        info = d.icmp
        u, src, sport, dst, dport = info.quoted_udp
        quoted = _QuotedDatagram(src, sport, dst, dport, frame.data[info.data_at:d.payload_offset + len(d.payload)],
                                 info.data_at)
        stack = Stack(self, frame, quoted)
        proto = self.udp_protocol(stack, quoted)
        if proto is None:         # (the heuristics tried on the quoted payload: before its data layer)
            return stack.with_tries(Stack(self, frame, d).packet())
        stack.dissect(proto, frame.data, info.data_at, info.data_at + len(quoted.payload))
        info.handed = True                    # no data layer for the quoted payload
        if d.protocols and d.protocols[-1] == "data":
            d.protocols.pop()
        for layer in stack.layers:
            if layer.listed:
                d.protocols.extend(getattr(self.protocols.get(layer.proto), "listed_after", ()))
                d.protocols.append(layer.proto)
        return stack.with_tries(Packet(frame, d, stack.layers, d.plain_info, d.protocol_column(), stack.sources))

    def _quoted_segment(self, frame, d) -> Packet:
        """An ICMP error quoting a TCP segment with payload: tshark's TCP offers the payload to its dissectors as
        decode_tcp_ports does: the connection's own (a heuristic's claim), the server's port, the lower port, the
        higher one, then the heuristic list. The plugin's say no in an error packet (rt.stream_dissector: the
        stream's state is not the quoted piece's), each leaving wslua's fake item inside the ICMP layer before the
        data (capture/layers/icmp.py). The payload stays data, and nothing is learnt: no list moves."""
        info = d.icmp
        _, src, sport, dst, dport = info.quoted_tcp
        lua = 0
        claimed = self.streams.claimed(src, sport, dst, dport) if self.streams is not None else None
        if claimed is not None:
            lua += getattr(claimed, "lua", True) is not False
        table = dict(self.tables.get("tcp.port", {}))
        for (name, key), proto in self.settings.decode_as.items():
            if name == "tcp.port":
                table[key] = self.protocols[proto]
        low, high = (sport, dport) if sport <= dport else (dport, sport)
        for port in (info.server_port, low, high if high != low else None):
            proto = table.get(port) if port else None
            if proto is not None:
                lua += getattr(proto, "lua", True) is not False
        lua += sum(getattr(p, "lua", True) is not False for p, _ in self.heuristic_lists.get("tcp", ()))
        info.lua_tries = lua
        return Stack(self, frame, d).packet()

    def udp_protocol(self, stack: Stack, d) -> Protocol | None:
        """As Wireshark's UDP: the conversation's dissector (set by a heuristic that claims it), then ports, then
        heuristics."""
        key = stack.pair
        proto = self.claimed.get(key)
        if proto is not None:
            return proto
        proto = stack.lookup("udp.port", (d.sport, d.dport), d.payload, d.payload_offset)
        if proto is not None and getattr(proto, "heuristic_claims", False) and \
                not any(proto is self.tables.get("udp.port", {}).get(port) for port in (d.sport, d.dport)):
            self.claimed[key] = proto
        return proto
