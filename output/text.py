"""Text outputs: the one-line summary, the -V detail tree, the -x hex dump. Colours (rich) on a terminal only."""
from __future__ import annotations

import time

from ..capture.layers.data import hex_rows
from ..engine.template import Slot, SlotLayer, positional_runs
from ..engine.tree import ERROR, NOTE, WARN, GROUP_NAMES, SEVERITY_NAMES, HiddenItem, Item
from . import tshark_values as tv
from .frozen import FrozenText
from .sink import parts_writer

_SEVERITY_STYLE = {ERROR: "bold red", WARN: "yellow", NOTE: "cyan"}


TIME_FORMATS = ("a", "ad", "adoy", "d", "dd", "e", "r", "u", "ud", "udoy")


def _seconds(ns: int, digits: int) -> str:
    """A signed time as tshark's display_signed_time: seconds, then the fraction truncated to `digits` (a
    negative time that truncates to zero loses its sign: "0.000")."""
    secs, frac = divmod(abs(ns), 1_000_000_000)
    if digits:
        frac //= _TRUNCATE[digits]
        text = "%d.%0*d" % (secs, digits, frac)
    else:
        frac = 0
        text = str(secs)
    return "-" + text if ns < 0 and (secs or frac) else text


_TRUNCATE = [10 ** (9 - d) for d in range(10)]     # digits -> the divisor that keeps that many of nine
_RELATIVE_TO = {"r": 0, "d": 1, "dd": 2}           # -t format -> its reference in Decoded.times
SECONDS = {"hms": False}      # tshark -u hms: relative and delta times in the Time column as hours, minutes, seconds


def set_seconds_format(fmt: str) -> None:
    """-u s (the default) or -u hms."""
    SECONDS["hms"] = fmt == "hms"


def column_seconds(ns: int, digits: int) -> str:
    """A relative or delta time as the Time column shows it: seconds, or with -u hms as tshark's
    set_time_hour_min_sec ("1h  2m  3.000000s", "2m  3.000000s", "3.000000s", "- " before a negative one)."""
    if not SECONDS["hms"]:
        return _seconds(ns, digits)
    secs, frac = divmod(abs(ns), 1_000_000_000)
    tail = "s" if not digits else ".%0*ds" % (digits, frac // _TRUNCATE[digits])
    sign = "- " if ns < 0 else ""
    if secs >= 3600:
        return f"{sign}{secs // 3600}h {secs // 60 % 60:2d}m {secs % 60:2d}{tail}"
    if secs >= 60:
        return f"{sign}{secs // 60}m {secs % 60:2d}{tail}"
    return f"{sign}{secs}{tail}"


def time_column(packet, fmt: str = "r", digits: int | None = None) -> str:
    """The Time column as tshark's -t FORMAT prints it: relative to the capture's first frame (r), to the
    previous captured (d) or displayed (dd) frame, the epoch (e), or a local (a, ad, adoy) or UTC (u, ud, udoy)
    date and time. `digits`: the time precision (default: the frame's, 6 for microsecond files)."""
    ts = packet.frame.ts_ns
    if digits is None:
        digits = packet.frame.prec
    if fmt in ("r", "d", "dd"):
        times = getattr(packet.decoded, "times", None)
        ref = None if times is None else times[_RELATIVE_TO[fmt]]
        return column_seconds(ts - ref if ref is not None else 0, digits)
    if fmt == "e":
        return _seconds(ts, digits)
    t = (time.localtime if fmt[0] == "a" else time.gmtime)(ts // 1_000_000_000)
    clock = f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}" + _seconds(ts % 1_000_000_000, digits)[1:]
    if fmt.endswith("doy"):
        return f"{t.tm_year:04d}/{t.tm_yday:03d} {clock}"
    if fmt.endswith("d"):
        return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} {clock}"
    return clock


def summary_line(packet, time_format: str = "r", tabs: bool = False) -> str:
    """tshark's one-line summary; `tabs`: its columns (padded alike) delimited by tabs (-T tabs)."""
    frame, d = packet.frame, packet.decoded
    t = time_column(packet, time_format)
    src, dst = d.address_columns()
    s = "\t" if tabs else " "
    return (f"{frame.number:>5}{s}{t:>10}{s}{src:>12}{s}→{s}{dst:<12}{s}{packet.protocol}{s}{frame.length}{s}"
            f"{packet.info}")


LABEL_LENGTH = 240                   # Wireshark's ITEM_LABEL_LENGTH: a label's buffer, its NUL included
TRUNCATED = b" [truncated]"


def item_label(item: Item) -> str:
    text, f = item.label, item.field
    if text is None:
        if f is None:
            text = ""
        elif f.labeler:
            text = f.labeler(item)
        else:
            text = (_LABEL_MAKERS.get(f) or _label_maker(f))(item.value)
    if f is not None and len(text) >= LABEL_LENGTH // 4:
        text = fit_label(text, f.name)
    return "[" + text + "]" if item.generated and not text.startswith("[") else text


_LABEL_MAKERS: dict = {}     # FieldInfo -> its label maker


def _label_maker(f):
    """tv.label(f, value) specialised once per field for the common integer fields; a string is cut before it is
    escaped to what a label can show (fit_label keeps at most 239 bytes: every character is at least one)."""
    t, values, prefix = f.ftype, f.values, f.name + ": "
    if t in ("uint8", "uint16", "uint32") and not f.mask and f.base in ("DEC", "HEX"):
        if f.base == "DEC":
            num = str
        else:
            num = ("0x%0" + str(2 * int(t[4:]) // 8) + "x").__mod__
        if values is None:
            make = lambda v: prefix + num(v & 0xFFFFFFFF)       # noqa: E731
        else:
            make = lambda v: prefix + values.get(v & 0xFFFFFFFF, "Unknown") + " (" + num(v & 0xFFFFFFFF) + ")"  # noqa
    elif t == "string":
        def make(v):
            v = v[:LABEL_LENGTH]
            return prefix + tv.format_text(v if "\0" not in v else v[:v.index("\0")])
    elif t == "bytes":
        def make(v):    # tshark shows at most 36 bytes, then an ellipsis
            return (prefix + (v.hex() if len(v) <= 36 else v[:36].hex() + "\u2026")) if v else prefix + "<MISSING>"
    else:
        make = lambda v: tv.label(f, v)                       # noqa: E731
    _LABEL_MAKERS[f] = make
    return make


def fit_label(text: str, name: str) -> str:
    """A label as Wireshark's fixed buffer leaves it (proto.c label_mark_truncated): cut to 239 bytes, then
    " [truncated]" put after the field name and the end cut again at a character boundary."""
    if len(text) < LABEL_LENGTH and text.isascii():      # (a flag of the str: no encoding needed to know)
        return text
    raw = text.encode()
    if len(raw) < LABEL_LENGTH:
        return text
    at = text.find(name)
    name_pos = len(text[:at + len(name)].encode()) if at >= 0 else 0
    buf = raw[:LABEL_LENGTH - 1]
    if name_pos < LABEL_LENGTH - len(TRUNCATED):
        buf = (buf[:name_pos] + TRUNCATED + buf[name_pos:])[:LABEL_LENGTH]
        end = LABEL_LENGTH - 2          # measured: tshark 4.0.17 keeps 238 bytes of an ASCII label
        while end > 0 and buf[end] & 0xC0 == 0x80:     # back to the first byte of the last character
            end -= 1
        buf = buf[:end]
    else:
        buf = buf[:name_pos] + TRUNCATED[:LABEL_LENGTH - 1 - name_pos]
    return buf.decode("utf-8", "replace")


def tree_lines(item: Item, depth: int = 0):
    """(depth, text, style) lines of an item's subtree, as tshark -V prints them (experts get their details)."""
    if item.__class__ is HiddenItem:
        return
    info = item.expert_info
    if info is not None:
        yield depth, f"[{item.label}]", _SEVERITY_STYLE.get(info.severity, "")
        yield depth + 1, f"[{info.message}]", ""
        yield depth + 1, f"[Severity level: {SEVERITY_NAMES[info.severity]}]", ""
        yield depth + 1, f"[Group: {GROUP_NAMES[info.group]}]", ""
        return
    yield depth, item_label(item), "dim" if item.generated else ""
    if _is_data(item) and _HEX_FOR_DATA[0]:
        for row in _data_rows(item):
            yield 0, row, ""
    for child in item.children or ():
        yield from tree_lines(child, depth + 1)


_PADS = ["    " * d for d in range(64)]


def _pad(depth: int) -> str:
    return _PADS[depth] if depth < 64 else "    " * depth


def _detail(kids, depth: int, out: list) -> None:
    """Append the -V lines of `kids` at `depth` to `out`: tree_lines as plain text, without a generator and a
    write per line (the -V hot path). A frozen subtree (a tuple shared between packets) is rendered once."""
    if kids.__class__ is tuple:
        out.append(_FROZEN.text(kids, depth))
        return
    _detail_fresh(kids, depth, out)


def _detail_fresh(kids, depth: int, out: list) -> None:
    pad = _pad(depth)
    add = out.append
    for item in kids:
        if item.__class__ is HiddenItem:
            continue
        info = item.expert_info
        if info is not None:
            inner = _pad(depth + 1)
            add(f"{pad}[{item.label}]\n{inner}[{info.message}]\n{inner}[Severity level: "
                f"{SEVERITY_NAMES[info.severity]}]\n{inner}[Group: {GROUP_NAMES[info.group]}]\n")
            continue
        text = item.label
        if text is None and not item.generated and (f := item.field) is not None and not f.labeler:
            # item_label's common case, inline; the label is a function of the field and the value alone
            value = item.value
            key = (f, value.__class__, value) if value.__class__ in _MEMO_TYPES else None     # (1 == True)
            text = _LABELS.get(key) if key is not None else None
            if text is None:
                text = (_LABEL_MAKERS.get(f) or _label_maker(f))(value)
                if len(text) >= LABEL_LENGTH // 4:
                    text = fit_label(text, f.name)
                if key is not None:
                    if len(_LABELS) >= LABEL_MEMO:
                        _LABELS.clear()
                    _LABELS[key] = text
        elif text is None or item.generated or len(text) >= LABEL_LENGTH // 4:
            text = item_label(item)      # made from the field, bracketed, or cut: else the label is the line
        add(pad + text + "\n")
        kids = item.children
        if kids:                         # _detail, inline
            f = item.field
            if f is not None and f.abbrev == "data" and _HEX_FOR_DATA[0]:      # (data nested in a layer: ICMP's)
                add(_data_dump(item))
            if kids.__class__ is tuple:
                add(_FROZEN.text(kids, depth + 1))
            else:
                _detail_fresh(kids, depth + 1, out)


_FROZEN = FrozenText(_detail_fresh)
# print.c's print_hex_for_data (not with -x): set by each detail_parts call for the _detail_fresh it makes
_HEX_FOR_DATA = [True]


def _is_data(item: Item) -> bool:
    """The data protocol's item (capture/layers/data.py, or the WebSocket payload's: each binds its own field)."""
    f = item.field
    return f is not None and f.abbrev == "data"


def _data_rows(item: Item) -> list[str]:
    """The lines print.c writes under the data protocol's line, at column 0: a blank one, then the hex dump of its
    bytes (its data.data child)."""
    kids = item.children
    data = kids[0].value if kids and isinstance(kids[0].value, bytes) else b""
    return ["", *hex_rows(data)]


def _data_dump(item: Item) -> str:
    """_data_rows as text, each line ended."""
    return "\n".join(_data_rows(item)) + "\n"


# -V labels made from (field, value) alone, memoised: a game's opcodes, flags, ids and texts recur from packet to
# packet (a label costs a maker call, number formatting, value names and a length check). Bounded in entries.
_LABELS: dict = {}
LABEL_MEMO = 1 << 16
_MEMO_TYPES = frozenset((int, bool, str, bytes))


def detail_text(packet, only: set[str] | None = None, end: str = "", data_hex: bool = True) -> str:
    """A packet's -V tree as plain text (what layer_lines gives, joined), then `end`. data_hex: the data
    protocol's hex dump of its bytes under its line (print.c's print_hex_for_data: not when -x follows)."""
    return "".join(detail_parts(packet, only, end, data_hex))


def detail_parts(packet, only: set[str] | None = None, end: str = "", data_hex: bool = True) -> list[str]:
    """detail_text as a text per layer (output/sink.py encodes each on its own)."""
    _HEX_FOR_DATA[0] = data_hex
    parts: list[str] = []
    out: list[str] = []
    add = out.append
    for layer in packet.layers():
        if layer.__class__ is SlotLayer and layer.materialized is None:
            label = layer.label + "\n"
            if only is None or layer.proto in only:
                compiled = layer.template.compiled.get("detail") or _compile_template(layer.template)
                if compiled[0] is not None:
                    parts.append(label + compiled[0] % compiled[1](layer.vals))
                else:                    # runs of lines, the non-ASCII ones apart (engine.template.positional_runs)
                    texts = compiled[1](layer.vals)
                    texts[0] = label + texts[0]
                    parts += texts
            else:
                parts.append(label)
            continue
        top = layer.item
        add(_layer_head(top, layer.proto) + "\n")
        shown = only is None or layer.proto in only       # -O: a protocol not listed is its first line only
        if data_hex and shown and _is_data(top):
            add(_data_dump(top))
        if shown and top.children:
            _detail(top.children, 1, out)
        parts.append("".join(out))
        out.clear()
    if end:
        parts.append(end)
    return parts


def _compile_template(tpl):
    """A template's -V text (engine.template), compiled once: (text, values), or (None, texts) where it holds
    non-ASCII lines (positional_runs)."""
    lines: list[str] = []
    _compile_detail(tpl.nodes, 1, lines)
    compiled = tpl.compiled["detail"] = positional_runs("".join(lines))
    return compiled


def _compile_detail(nodes, depth: int, out: list) -> None:
    pad = _pad(depth)
    for n in nodes:
        if n.__class__ is not Slot:          # a static item: its lines, as any item's
            part: list[str] = []
            _detail_fresh((n,), depth, part)
            out.append("".join(part).replace("%", "%%"))
            continue
        if n.cls is HiddenItem:
            continue
        label = n.label
        out.append(pad + ("[" + label + "]" if n.generated and not label.startswith("[") else label) + "\n")
        _compile_detail(n.kids, depth + 1, out)


def _layer_head(top: Item, proto: str) -> str:
    """A layer's first -V line: its label (cut as Wireshark's label buffer), or its name."""
    if top.label:
        if top.generated and top.label.startswith("[") and len(top.label) > LABEL_LENGTH:
            # a formatted label: cut to the buffer, no "[truncated]" mark
            return "[" + top.label[1:-1].encode()[:LABEL_LENGTH - 1].decode("utf-8", "ignore") + "]"
        return top.label
    if top.field is not None and (top.field.labeler or top.field.ftype not in ("none", "protocol")):
        return item_label(top)          # a labelled layer, or a field item on the top level (Layer.after)
    return proto


def layer_lines(packet, only: set[str] | None = None, data_hex: bool = True):
    _HEX_FOR_DATA[0] = data_hex
    for layer in packet.layers():
        top = layer.item
        head = _layer_head(top, layer.proto)
        yield 0, head, "bold"
        if only is not None and layer.proto not in only:
            continue
        if data_hex and _is_data(top):
            for row in _data_rows(top):
                yield 0, row, ""
        for child in top.children or ():
            yield from tree_lines(child, 1)


def hex_columns(chunk: bytes) -> tuple[str, str]:
    """The hex and ASCII columns of one 16-byte row, as tshark draws them (two groups of eight)."""
    hexes = " ".join(f"{b:02x}" for b in chunk[:8])
    if len(chunk) > 8:
        hexes += "  " + " ".join(f"{b:02x}" for b in chunk[8:])
    return hexes, "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)


def hexdump(data: bytes, ascii: str = "ascii") -> list[str]:
    """-x: tshark 4.0's packet bytes (print.c/hex_dump_buffer): sixteen bytes single-spaced, then the ASCII text
    (--hexdump delimit: between | characters; noascii: none, the hex column still padded)."""
    lines = []
    digits = max(4, len(f"{len(data) - 1:x}"))      # as many offset digits as the last offset needs, at least 4
    for off in range(0, len(data), 16):
        chunk = data[off:off + 16]
        if ascii == "noascii":
            lines.append(f"{off:0{digits}x}  {chunk.hex(' '):<47}   ")
            continue
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        if ascii == "delimit":
            text = f"|{text}|"
        lines.append(f"{off:0{digits}x}  {chunk.hex(' '):<47}   {text}")
    return lines


def hex_lines(packet, options: tuple[str, str] | None = None) -> list[str]:
    """The frame, then every buffer reassembly or decompression made, each under its name (as tshark does);
    `options`: --hexdump's (data sources: all, or the frame's only; the ASCII column)."""
    sources, ascii = options or ("all", "ascii")
    found = packet.sources or []
    if len(found) <= 1 or sources == "frames":
        return hexdump(packet.frame.data, ascii)
    out = []
    for source in found:         # one after the other, no blank line between them (tshark 4.0)
        n = len(source.data)
        out.append(f"{source.name} ({n} byte{'' if n == 1 else 's'}):")
        out.extend(hexdump(source.data, ascii))
    return out


class TextWriter:
    """The text output of packets: summary lines, or -V trees (colours on a terminal), with -x hex dumps.
    Same interface as the JSON and fields writers: write(packet), close()."""

    def __init__(self, out, *, detail: bool = False, hexdump: bool = False, only: set[str] | None = None,
                 time_format: str = "r", summary: bool = False, separator: str = "", tabs: bool = False):
        """summary: the summary line before a packet's tree or bytes too (tshark -P); separator: the line
        after each packet's tree or bytes (tshark -S; an empty line by default); tabs: summary columns
        delimited by tabs (-T tabs)."""
        self.out, self.detail, self.hexdump, self.only = out, detail, bool(hexdump), only
        self.tabs = tabs
        self.hex_options = hexdump if isinstance(hexdump, tuple) else None     # --hexdump's (hex_lines)
        self.time_format, self.summary, self.end = time_format, summary, separator + "\n"
        self.console = None
        if out.isatty():
            from rich.console import Console
            self.console = Console(file=out, highlight=False)
        # -V alone, to a file or pipe: each layer's text encoded on its own (output/sink.py)
        self.write_parts = parts_writer(out) if detail and not summary and not hexdump and self.console is None \
            else None

    def write(self, packet) -> None:
        out = self.out
        if not self.detail:
            if self.hexdump:      # tshark 4.0: -x without -V prints the bytes only, no summary line (but -P)
                if self.summary:
                    out.write(summary_line(packet, self.time_format, self.tabs) + "\n\n")
                out.write("\n".join(hex_lines(packet, self.hex_options)) + "\n" + self.end)
                return
            out.write(summary_line(packet, self.time_format, self.tabs) + "\n")
            return
        if self.summary:
            out.write(summary_line(packet, self.time_format, self.tabs) + "\n")
        if self.console is None:
            if not self.hexdump:
                if self.write_parts is not None:
                    self.write_parts(detail_parts(packet, self.only, self.end))
                else:
                    out.write(detail_text(packet, self.only, self.end))
                return
            out.write(detail_text(packet, self.only, data_hex=False))
        else:
            for depth, line, style in layer_lines(packet, self.only, not self.hexdump):
                if style:
                    self.console.print("    " * depth + line, style=style, highlight=False, markup=False,
                                       soft_wrap=True)
                else:
                    out.write("    " * depth + line + "\n")
        if self.hexdump:
            out.write("\n" + "\n".join(hex_lines(packet, self.hex_options)) + "\n")
        out.write(self.end)

    def close(self) -> None:
        pass
