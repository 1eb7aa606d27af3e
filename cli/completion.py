"""Shell completion (click's): capture files in first position, field names after -e and in -Y filters, -z
statistics, -o preferences and their values, protocols for -O/-j/-J/-d. Each function is a click
`shell_complete` callback: (ctx, param, incomplete) -> the candidates. Lists are built on demand (a TAB press)."""
from __future__ import annotations

import re


def CompletionItem(value, **kw):      # noqa: N802 - click's class, imported on a TAB press only (start-up time)
    from click.shell_completion import CompletionItem as item
    return item(value, **kw)


def _field_names() -> list[str]:
    from ..analysis.filter_fields import registry
    from ..output.columns import TITLES
    return sorted(registry()) + [f"_ws.col.{t}" for t in TITLES]


def _protocols() -> list[str]:
    from .glossary_cmd import protocol_names
    return [abbrev for abbrev, _, _ in protocol_names()]


def fields(ctx, param, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(name) for name in _field_names() if name.startswith(incomplete)]


def display_filter(ctx, param, incomplete: str) -> list[CompletionItem]:
    """The field name being typed at the end of a filter ("blank.type == 1 && blank.lo" -> ...login.name)."""
    head, word = re.match(r"(.*?)([A-Za-z_][\w.]*)?$", incomplete, re.S).groups()
    word = word or ""
    names = _field_names()
    from ..analysis.filter_functions import FUNCTIONS
    return [CompletionItem(head + name) for name in [*names, *(f + "(" for f in FUNCTIONS)]
            if name.startswith(word)]


def statistics(ctx, param, incomplete: str) -> list[CompletionItem]:
    from ..analysis.stats import TAPS
    from ..output import colinfo  # noqa: F401 - registers -z proto,colinfo
    return [CompletionItem(name + ",") for name in sorted(TAPS) if name.startswith(incomplete)]


def preferences(ctx, param, incomplete: str) -> list[CompletionItem]:
    """NAME: first, then NAME:VALUE for each of its choices."""
    from .glossary_cmd import preferences as prefs
    out = []
    for name, desc, default, choices in prefs():
        if ":" in incomplete and incomplete.split(":", 1)[0] == name:
            out += [CompletionItem(f"{name}:{c}", help=desc) for c in (choices or [default])
                    if f"{name}:{c}".startswith(incomplete)]
        elif name.startswith(incomplete):
            out.append(CompletionItem(f"{name}:", help=desc))
    return out


def protocols(ctx, param, incomplete: str) -> list[CompletionItem]:
    """A protocol, or the next one of a list ("ip,bl" -> "ip,blank"; -j takes spaces)."""
    head, _, word = incomplete.rpartition("," if "," in incomplete else " ")
    prefix = head + ("," if "," in incomplete else " ") if head else ""
    return [CompletionItem(prefix + p) for p in _protocols() if p.startswith(word)]


def decode_as(ctx, param, incomplete: str) -> list[CompletionItem]:
    """udp.port==N,PROTO: the table names first, the protocols after the comma."""
    if "," in incomplete:
        head = incomplete.rsplit(",", 1)[0]
        return [CompletionItem(f"{head},{p}") for p in _protocols() if f"{head},{p}".startswith(incomplete)]
    tables = ["udp.port==", "tcp.port==", "sctp.port==", "enet.port==", "enet.connect_data==", "ws.port=="]
    return [CompletionItem(t) for t in tables if t.startswith(incomplete)]


def capture_file_first(commands: list[str], incomplete: str) -> list[CompletionItem]:
    """`protodump <TAB>`: sub-commands and capture files (the default command reads one)."""
    return [CompletionItem(incomplete, type="file")]
