"""Rendering of statistics results (analysis.stats): tshark's plain-text layouts, rich tables on a terminal,
JSON for machines. The tap results are plain data; only this module knows how they look."""
from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from ..analysis.spill_table import LazyRows
from ..analysis import stats_hosts, stats_icmp, stats_sctp, stats_tree
from ..capture import manuf
from ..engine.tree import Item
from .text import hex_columns, tree_lines

EQ80 = "=" * 80
EQ67 = "=" * 67


def format_size(n: int) -> str:
    """tshark's format_size(..., FORMAT_SIZE_UNIT_BYTES): SI prefixes from 10000 up, integer division."""
    for div, prefix in ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n // div >= 10:
            return f"{n // div} {prefix}B"
    return f"{n} bytes"


# -- plain text, tshark's layouts ---------------------------------------------------------------------

def text_phs(r) -> list[str]:
    lines = ["", EQ67, "Protocol Hierarchy Statistics", f"Filter: {r['filter']}", ""]

    def walk(nodes, depth):
        for n in nodes:
            lines.append(f"{'  ' * depth + n['protocol']:<40} frames:{n['frames']} bytes:{n['bytes']}")
            walk(n["children"], depth + 1)
    walk(r["protocols"], 0)
    lines.append(EQ67)
    return lines


def shown_address(r, addr: str) -> str:
    """An address as tshark's conversation and endpoint tables show it: an Ethernet address by its resolved name
    (the OUI's short name with the rest, e.g. 00:00:00_00:00:00), unless -n."""
    if r["type"] != "eth":
        return addr
    return manuf.resolved(bytes.fromhex(addr.replace(":", ""))) or addr


def text_conv(r) -> Iterator[str]:
    """(Lines made one by one: a table of a million conversations is read from disk as it is printed.)"""
    pad = " " * (59 if r["ports"] else 47)
    yield from (EQ80, r["title"], f"Filter:{r['filter'] or '<No Filter>'}",
                pad + "|       <-      | |       ->      | |     Total     |    Relative    |   Duration   |",
                pad + "| Frames  Bytes | | Frames  Bytes | | Frames  Bytes |      Start     |              |")
    w = 26 if r["ports"] else 20
    for c in r["conversations"]:
        yield (f"{shown_address(r, c['a_name']):<{w}} <-> {shown_address(r, c['b_name']):<{w}}"
               f"  {c['rx_frames']:6d} {format_size(c['rx_bytes']):<9}"
               f"  {c['tx_frames']:6d} {format_size(c['tx_bytes']):<9}"
               f"  {c['frames']:6d} {format_size(c['bytes']):<9}"
               f"  {c['rel_start']:14.9f}   {c['duration']:12.4f}")
    yield EQ80


def text_endpoints(r) -> Iterator[str]:
    ports = r["ports"]
    yield from (EQ80, r["title"], f"Filter:{r['filter'] or '<No Filter>'}",
                "                       |  " + ("Port  ||  " if ports else "") +
                "Packets  | |  Bytes  | | Tx Packets | | Tx Bytes | | Rx Packets | | Rx Bytes |")
    for e in r["endpoints"]:
        port = f"      {e['port']:>5}" if ports else ""     # "%-20s      %5s     %6lu" / "%-20s      %6lu"
        yield (f"{shown_address(r, e['address']):<20}{port}{'     ' if ports else '      '}{e['packets']:6d}     {e['bytes']:9d}     {e['tx_packets']:6d}"
               f"       {e['tx_bytes']:9d}      {e['rx_packets']:6d}       {e['rx_bytes']:9d}   ")
    yield EQ80


def text_expert(r) -> list[str]:
    lines = []
    for s in r["sections"]:
        lines += ["", f"{s['severity']} ({s['total']})", "=============",
                  "   Frequency      Group           Protocol  Summary"]
        lines += [f"{e['frequency']:12d} {e['group']:>10} {e['protocol']:>18}  {e['summary']}" for e in s["items"]]
    return lines


def _center(label: str, width: int) -> str:
    """tshark's printcenter(): a label centred in a column of `width` digits plus a space each side."""
    gap = width - len(label)
    left = gap // 2 + 1 + (gap % 2)
    right = gap // 2 + 1
    return " " * left + label + " " * right + "|"


def text_io_stat(r):
    """The io,stat table's lines, yielded (its rows may be millions: never all in memory)."""
    prec, rounded = r["precision"], r["rounded_duration_us"]
    dv = 10 ** (6 - prec)
    dur = r["duration_us"]
    # iostat_draw makes its number format from the duration's digits before rounding it (up to the next printed
    # digit only when past half of one), and every width from those after: where rounding adds a digit (9.7 s at
    # 1 s, not 9.5 s), the bounds are printed a digit narrower than their column, and the Duration and Interval
    # lines come out that much shorter than the table
    end = dur if dur % dv <= 5 * (dv // 10) else rounded // dv * dv
    dur_mag = len(str(end // 1_000_000))
    fmt_mag = len(str(dur // 1_000_000))
    short = dur_mag - fmt_mag

    def t(us):      # an interval bound, at the table's precision
        return f"{us // 1_000_000:{fmt_mag}d}" + (f".{us % 1_000_000 // dv:0{prec}d}" if prec else "")
    invl_col_w = max((2 * dur_mag + 8) if prec == 0 else (2 * dur_mag + 2 * prec + 10), 12)
    widths = []       # (frames, bytes) widths of a frames-and-bytes column, (None, width) of a function column
    funcs = r.get("functions") or [None] * len(r["filters"])
    for j in range(len(r["filters"])):
        if funcs[j] is not None:
            widths.append((None, funcs[j]["width"]))
            continue
        most_frames, most_bytes = _io_maxima(r["rows"], j)
        fr, val = max(6, len(str(most_frames))), max(5, len(str(most_bytes)))
        widths.append((fr, val))
    tabrow_w = invl_col_w + sum(val + 3 if fr is None else fr + val + 6 for fr, val in widths)
    invl_mag = len(str(r["interval_us"] // 1_000_000))
    if r["whole_capture"]:
        borderlen = 30 + dur_mag + (prec + 1 if prec else 0)
    else:
        borderlen = 25 + max(invl_mag, dur_mag) + (prec + 1 if prec else 0)
    borderlen = max(borderlen, tabrow_w)
    fltr_w = max(len(f) + 11 if f else 26 for f in r["filters"])
    if fltr_w > borderlen and borderlen < 102:
        borderlen = min(fltr_w, 102)
    if borderlen - tabrow_w == 1:
        borderlen += 1

    def boxed(text, narrower=0):
        return f"{text:<{borderlen - 1 - narrower}}|"
    iv = r["interval_us"]
    whole = r["whole_capture"]
    interval = t(iv).strip() if whole else t(iv)      # (a whole capture's: its duration, rounded)
    # tshark 4.0 prints an integral interval's duration with "%u.%6u": the microseconds space-padded
    duration = t(end).strip() if prec else f"{dur // 1_000_000}.{dur % 1_000_000:6d}"
    lines = ["", "=" * borderlen, boxed("| IO Statistics"), boxed("|"),
             boxed(f"| Duration: {duration} secs", 0 if prec else short),
             boxed(f"| Interval: {interval} secs", 0 if whole else short), boxed("|")]
    for j, f in enumerate(r["filters"]):
        lines.append(boxed(("| Col" if j == 0 else "|    ") + f"{j + 1:2d}: " + (f or "Frames and bytes")))
    lines.append("|" + "-" * (borderlen - 2) + "|")
    filler = " " * (borderlen - tabrow_w - 1) + "|" if tabrow_w < borderlen else ""
    head = "|" + " " * (invl_col_w - 2) + "|" + "".join(
        (f"{j + 1:<{val + 2}}" if fr is None else f"{j + 1:<2}" + " " * (fr + val + 3)) + "|"
        for j, (fr, val) in enumerate(widths))
    lines.append(head + filler)
    lines.append(f"{'| Interval':<{invl_col_w - 1}}|" + "".join(
        _center(funcs[j]["name"], val) if fr is None else _center("Frames", fr) + _center("Bytes", val)
        for j, (fr, val) in enumerate(widths)) + filler)
    lines.append("|-" + "-" * (tabrow_w - 3) + "|" + filler)
    yield from lines
    for i, row in enumerate(r["rows"]):       # made one at a time (analysis/stats_io.IoRows)
        if prec == 0 and row["last"]:
            cell = f"| {' ' if dur_mag == 1 else ''}{t(row['start_us'])} <> {'Dur':<{max(dur_mag + 1, 3)}}|"
        elif prec == 0 and dur_mag == 1:
            cell = f"|  {t(row['start_us'])} <> {t(row['end_us'])}  |"
        else:
            cell = f"| {t(row['start_us'])} <> {t(row['end_us'])} |"
        cols = "".join(_function_cell(funcs[j]["value"](i, row["last"]), val) if fr is None else
                       f" {c['frames']:{fr}d} | {c['bytes']:{val}d} |"
                       for j, (c, (fr, val)) in enumerate(zip(row["columns"], widths)))
        yield cell + cols + (f"{'|':>{borderlen - tabrow_w}}" if tabrow_w < borderlen else "")
    yield "=" * borderlen


def _function_cell(text: str | None, width: int) -> str:
    """A function column's cell; None: none at all (tshark's LOAD of a field that is no relative time)."""
    return "" if text is None else f" {text:>{width}} |"


def _io_maxima(rows, column: int) -> tuple[int, int]:
    if hasattr(rows, "maxima"):
        return rows.maxima(column)
    return (max((row["columns"][column]["frames"] for row in rows), default=0),
            max((row["columns"][column]["bytes"] for row in rows), default=0))


def text_game_types(r) -> list[str]:
    lines = [EQ80, f"{r['proto']} message types (bytes: {r['proto']} message bytes)"]
    for c in r["conversations"]:
        lines += [f"Client {c['client']} <-> server {c['server']}",
                  f"{'Type':<28} {'C->S packets':>12} {'C->S bytes':>12} {'S->C packets':>12} {'S->C bytes':>12}"]
        lines += [f"{t['type']:<28} {t['c2s_packets']:12d} {t['c2s_bytes']:12d} {t['s2c_packets']:12d}"
                  f" {t['s2c_bytes']:12d}" for t in c["types"]]
    lines.append(EQ80)
    return lines


def text_game_seq(r) -> list[str]:
    lines = [EQ80, f"{r['proto']} sequence analysis (from {r['proto']}.sequence expert infos)",
             f"{'Source':<22} {'Destination':<22} {'Packets':>8} {'Lost':>8} {'Duplicate':>9} {'Reordered':>9}"]
    lines += [f"{d['source']:<22} {d['destination']:<22} {d['packets']:8d} {d['lost']:8d} {d['duplicates']:9d}"
              f" {d['out_of_order']:9d}" for d in r["directions"]]
    lines.append(EQ80)
    return lines


# -- follow --------------------------------------------------------------------------------------------

def hex_lines(data: bytes, offset: int, prefix: str) -> list[str]:
    """tshark's follow hex dump: offset (upper-case hex), 16 bytes in two groups, ASCII in two groups (a space
    after the eighth character), then one trailing space dropped if there is one (measured on tshark 4.0: an
    ASCII column ending in 0x20 loses that one, an eight-byte line its group space)."""
    out = []
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        hexes, text = hex_columns(chunk)
        if len(chunk) >= 8:
            text = text[:8] + " " + text[8:]
        line = f"{prefix}{offset + i:08X}  {hexes:<49} {text}"
        out.append(line[:-1] if line.endswith(" ") else line)
    return out


def _ascii(data: bytes) -> str:
    return "".join(chr(b) if b in (10, 13) or 32 <= b < 127 else "." for b in data)


def _yaml_binary(data: bytes, indent: str) -> list[str]:
    return [indent + line for line in base64.encodebytes(data).decode().splitlines()]


def follow_data(mode: str, data: bytes, offset: int, node: int) -> list[str]:
    tab = "\t" if node else ""
    if mode == "hex":
        return hex_lines(data, offset, tab)
    if mode == "raw":
        return [tab + data.hex()]
    return [f"{tab}{len(data)}", _ascii(data)]          # ascii: the length line alone is indented


def text_follow(r) -> list[str]:
    nodes = r["nodes"]
    if r["mode"] == "yaml":
        lines = ["peers:"]
        for i, n in enumerate(nodes):
            lines += [f"  - peer: {i}", f"    host: {n['host']}", f"    port: {n['port']}"]
        lines.append("packets:")
        for rec in r["records"]:
            lines += [f"  - packet: {rec['frame']}", f"    peer: {rec['node']}",
                      f"    timestamp: {rec['ts_ns'] // 10**9 + rec['ts_ns'] % 10**9 / 1e9:.9f}"]   # tshark's double
            if "info" in rec:
                lines.append(f"    info: {json.dumps(rec['info'])}")
            lines += ["    data: !!binary |", *_yaml_binary(rec["data"], "      ")]
            for buf in rec.get("buffers", ()):
                lines += [f"    {buf['name'].lower().replace(' ', '_')}: !!binary |",
                          *_yaml_binary(buf["data"], "      ")]
        return lines
    lines = ["", EQ67, f"Follow: {r['proto']},{r['mode']}", f"Filter: {r['filter']}"]
    host = "[{}]" if r.get("ipv6") else "{}"          # tshark: an IPv6 node's address in brackets
    lines += [f"Node {i}: {host.format(n['host'])}:{n['port']}" for i, n in enumerate(nodes)]
    offsets = [0, 0]
    for rec in r["records"]:
        node = rec["node"]
        if r["mode"] == "decoded":        # a game follow: each message's summary and detail tree
            lines += decoded_message(rec)
            continue
        if "info" in rec:          # follow,blank: the message summary, then the buffers built from it
            tab = "\t" if node else ""
            lines.append(f"{tab}Frame {rec['frame']}: {rec['info']}")
            for buf in rec["buffers"]:
                lines.append(f"{tab}[{buf['name']}: {len(buf['data'])} bytes]")
                lines += follow_data(r["mode"], buf["data"], 0, node)
            continue
        lines += follow_data(r["mode"], rec["data"], offsets[node], node)
        offsets[node] += len(rec["data"])
    lines.append(EQ67)
    return lines


def _ms(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _conv_title(c) -> str:
    return f"{c['client']} <-> {c['server']} (frames {c['first_frame']}-{c['last_frame']})"


def text_enet_peers(r) -> list[str]:
    lines = [EQ80, "ENet peers (RTT in ms, measured by the sending peer from the acknowledgements it received)"]
    for c in r["conversations"]:
        lines.append(_conv_title(c))
        lines.append(f"  {'Peer':<22} {'Dgrams':>7} {'Bytes':>9} {'Rel':>6} {'Unrel':>6} {'Unseq':>6} {'Frag':>5}"
                     f" {'Acks':>6} {'Retr':>5} {'Late':>5} {'Unack':>5} {'Loss%':>6} {'RTT min/avg/max':>23} {'libenet':>8}"
                     f" {'RC ratio':>8}")
        for d in ("c2s", "s2c"):
            p = c[d]
            rtt = f"{_ms(p['rtt_min'])}/{_ms(p['rtt_avg'])}/{_ms(p['rtt_max'])}"
            lib = "-" if p["libenet_rtt"] is None else f"{p['libenet_rtt']}+-{p['libenet_rtt_variance']}"
            ratio = "-" if p["compression_ratio"] is None else f"{p['compression_ratio']:.3f}"
            lines.append(f"  {p['peer']:<22} {p['datagrams']:7d} {p['bytes']:9d} {p['reliable']:6d}"
                         f" {p['unreliable']:6d} {p['unsequenced']:6d} {p['fragments'] + p['unreliable_fragments']:5d}"
                         f" {p['acknowledgements']:6d} {p['retransmissions']:5d} {p['late']:5d} {p['unacknowledged']:5d}"
                         f" {100 * p['loss']:6.2f} {rtt:>23} {lib:>8} {ratio:>8}")
    lines.append(EQ80)
    return lines


def text_iceball_files(r) -> list[str]:
    lines = [EQ80, "Iceball file transfers"]
    for c in r["conversations"]:
        lines.append(_conv_title(c))
        lines.append(f"  {'File':<32} {'Type':<14} {'Compressed':>10} {'Inflated':>10} {'Frames':>11}"
                     f" {'Duration':>9} {'kB/s':>9}  Status")
        for f in c.get("files", ()):
            frames = f"{f['start_frame'] or f['request_frame']}-{f['end_frame'] or ''}"
            dur = "-" if f.get("duration") is None else f"{f['duration']:.4f}"
            tput = "-" if f.get("throughput") is None else f"{f['throughput'] / 1000:.1f}"
            lines.append(f"  {str(f['name']):<32} {str(f['type'] or '-'):<14} {f['compressed_size'] or 0:10d}"
                         f" {f['inflated_size'] or 0:10d} {frames:>11} {dur:>9} {tput:>9}  {f['status']}")
    lines.append(EQ80)
    return lines


def text_rutentoy_objects(r) -> list[str]:
    lines = [EQ80, "Rutentoy messages and textures"]
    for c in r["conversations"]:
        lines.append(_conv_title(c))
        for m in c.get("messages", ()):
            lines.append(f"  {m['frame']:>6} {m['direction']} message cookie={m['cookie']} channel={m['channel']}"
                         f" length={m['length']} {json.dumps(m['text'], ensure_ascii=False)}")
        for t in c.get("textures", ()):
            ok = {True: "ok", False: "MISMATCH", None: "not announced"}[t["digest_ok"]]
            lines.append(f"  {t['frame']:>6} {t['direction']} texture cookie={t['cookie']} length={t['length']}"
                         f" {t['width']}x{t['height']} xxh32={t['xxh32']} ({ok})")
    lines.append(EQ80)
    return lines


def text_freeblox_assets(r) -> list[str]:
    lines = [EQ80, "Freeblox assets and chat"]
    for c in r["conversations"]:
        lines.append(_conv_title(c))
        for a in c.get("assets", ()):
            lines.append(f"  {a['frame']:>6} asset {a['name']} ({a['type']}, {a['size']} bytes, {a['format']})")
        for m in c.get("chat", ()):
            lines.append(f"  {m['frame']:>6} chat {m['player']} [{m['chat_type']}]: "
                         f"{json.dumps(m['message'], ensure_ascii=False)}")
    lines.append(EQ80)
    return lines


def text_players(r) -> list[str]:
    lines = [EQ80, "Players per session"]
    for c in r["conversations"]:
        if not c.get("players") and not c.get("chat"):
            continue
        lines.append(f"{_conv_title(c)} {'/'.join(c.get('protocols', ()))}")
        for p in c.get("players", ()):
            lines.append(f"  {p['name']:<24} {p['how']:<9} frame {p['joined_frame']:>6} -> {p['left_frame']:>6}"
                         f" ({p['left_how']}, {p['left'] - p['joined']:.3f} s)")
        for m in c.get("chat", ()):
            lines.append(f"  {m['frame']:>6} {m['direction']} chat {json.dumps(m['text'], ensure_ascii=False)}")
    lines.append(EQ80)
    return lines


def decoded_message(rec) -> list[str]:
    tab = "\t" if rec["node"] else ""
    lines = [f"{tab}Frame {rec['frame']}: {rec.get('label', '')} ({len(rec['data'])} bytes)"]
    tree = rec.get("tree")
    if tree is None:
        return lines + hex_lines(rec["data"], 0, tab)
    return lines + [f"{tab}{'    ' * (depth + 1)}{label}" for depth, label, _ in tree_lines(tree)]


TEXT = {"phs": text_phs, "conv": text_conv, "endpoints": text_endpoints, "expert": text_expert,
        "io_stat": text_io_stat, "game_types": text_game_types, "game_seq": text_game_seq,
        "follow": text_follow, "enet_peers": text_enet_peers, "iceball_files": text_iceball_files,
        "rutentoy_objects": text_rutentoy_objects, "freeblox_assets": text_freeblox_assets, "players": text_players,
        "stats_tree": stats_tree.text_lines, "icmp_srt": stats_icmp.text_lines, "sctp_stat": stats_sctp.text_lines,
        "hosts": stats_hosts.text_lines, "colinfo": lambda _result: []}


def render_text(result: dict) -> str:
    lines = list(TEXT[result.get("layout", result["kind"])](result))
    return "\n".join(lines) + "\n" if lines else ""      # nothing at all for an empty result (tshark -z expert)


# -- JSON ---------------------------------------------------------------------------------------------

def _jsonable(o):
    if hasattr(o, "to_json"):          # io,stat rows, made on demand
        return o.to_json()
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    if isinstance(o, Item):            # a followed message's tree: its -V lines
        return [("    " * depth) + label for depth, label, _ in tree_lines(o)]
    raise TypeError(type(o).__name__)


def render_json(results: list[dict]) -> str:
    return json.dumps({"statistics": results}, indent=2, default=_jsonable) + "\n"


def write_json(results: list[dict], out) -> None:
    """render_json's text, written as it is made (a spilled table's rows are read from disk one by one)."""
    chunks, size = [], 0
    for chunk in json.JSONEncoder(indent=2, default=_jsonable).iterencode({"statistics": results}):
        chunks.append(chunk)
        size += len(chunk)
        if size >= 1 << 16:
            out.write("".join(chunks))
            chunks, size = [], 0
    chunks.append("\n")
    out.write("".join(chunks))


# -- rich, on a terminal ------------------------------------------------------------------------------

def _rich_table(result):
    """A rich Table for tabular results (None: keep tshark's text, e.g. follow and io,phs)."""
    from rich.table import Table
    kind = result.get("layout", result["kind"])    # game taps share one layout per kind of statistic
    if isinstance(result.get("conversations", result.get("endpoints")), LazyRows):
        return None                                 # tens of thousands of rows, on disk: the plain layout
    if kind == "conv":
        t = Table(title=f"{result['title']} ({result['filter'] or 'no filter'})")
        for col in ("A", "B", "Frames B→A", "Bytes B→A", "Frames A→B", "Bytes A→B", "Frames", "Bytes",
                    "Rel start", "Duration"):
            t.add_column(col, justify="left" if col in "AB" else "right")
        for c in result["conversations"]:
            counts = (c["rx_frames"], c["rx_bytes"], c["tx_frames"], c["tx_bytes"], c["frames"], c["bytes"])
            t.add_row(shown_address(result, c["a_name"]), shown_address(result, c["b_name"]), *map(str, counts),
                      f"{c['rel_start']:.9f}", f"{c['duration']:.4f}")
        return t
    if kind == "endpoints":
        t = Table(title=result["title"])
        keys = ["address"] + (["port"] if result["ports"] else []) + ["packets", "bytes", "tx_packets",
                                                                       "tx_bytes", "rx_packets", "rx_bytes"]
        for k in keys:
            t.add_column(k.replace("_", " ").title(), justify="left" if k == "address" else "right")
        for e in result["endpoints"]:
            t.add_row(shown_address(result, e["address"]), *(str(e[k]) for k in keys[1:]))
        return t
    if kind == "expert":
        t = Table(title="Expert infos")
        for col in ("Severity", "Frequency", "Group", "Protocol", "Summary"):
            t.add_column(col, justify="right" if col == "Frequency" else "left")
        for s in result["sections"]:
            for e in s["items"]:
                t.add_row(s["severity"], str(e["frequency"]), e["group"], e["protocol"], e["summary"])
        return t
    if kind == "game_types":
        t = Table(title=f"{result['proto']} message types")
        for col in ("Conversation", "Type", "C→S packets", "C→S bytes", "S→C packets", "S→C bytes"):
            t.add_column(col, justify="left" if col in ("Conversation", "Type") else "right")
        for c in result["conversations"]:
            for x in c["types"]:
                t.add_row(f"{c['client']} ↔ {c['server']}", x["type"], str(x["c2s_packets"]), str(x["c2s_bytes"]),
                          str(x["s2c_packets"]), str(x["s2c_bytes"]))
        return t
    if kind == "game_seq":
        t = Table(title=f"{result['proto']} sequence analysis")
        for col in ("Source", "Destination", "Packets", "Lost", "Duplicates", "Out of order"):
            t.add_column(col, justify="left" if col in ("Source", "Destination") else "right")
        for d in result["directions"]:
            t.add_row(d["source"], d["destination"], *map(str, (d["packets"], d["lost"], d["duplicates"],
                                                                d["out_of_order"])))
        return t
    return None


def write(results: list[dict], out, fmt: str = "text") -> None:
    """Print statistics results: JSON, rich tables when `out` is a terminal, else tshark's text."""
    if not results:
        return
    if fmt == "json":
        write_json(results, out)
        return
    console = None
    if out.isatty():
        from rich.console import Console
        console = Console(file=out, highlight=False)
    for result in reversed(results):        # tshark 4.0 and 4.4 print several -z in reverse command-line order
        table = _rich_table(result) if console is not None else None
        if table is not None and fits(console, table):
            console.print(table)
        else:
            for line in TEXT[result.get("layout", result["kind"])](result):     # streamed, not joined
                out.write(line + "\n")


def fits(console, table) -> bool:
    """Whether the table shows every cell whole at the terminal's width. Rich would shrink columns and cut
    addresses ("127.…"); a table that does not fit is printed in tshark's plain layout instead (the terminal wraps
    its long lines, nothing is cut)."""
    for column in table.columns:
        column.no_wrap = True
    natural = console.measure(table, options=console.options.update(max_width=100_000)).maximum
    return natural <= console.width
