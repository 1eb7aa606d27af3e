"""`protodump fields [PROTO]`: every field `-e` accepts (standard layers, expert infos, game protocols), like
`tshark -G fields` but one readable line each: abbrev, type (with the base for integers), name."""
from __future__ import annotations

import json

import click

from ..dissectors import PROTOCOLS
from ..engine.tree import INTEGER_TYPES
from ..output.fields_out import EXPERT_FIELDS, game_fields, payload_layers, standard_fields


def field_groups() -> list[tuple[str, list]]:
    """(protocol, fields) in registration order: the standard layers by abbrev prefix, `_ws`, then each game."""
    groups: dict[str, list] = {}
    for f in standard_fields():
        groups.setdefault(f.abbrev.split(".")[0], []).append(f)
    for f in EXPERT_FIELDS.values():
        groups.setdefault("_ws", []).append(f)
    out = [(name, fs) for name, fs in groups.items() if name != "_ws"] + [("_ws", groups["_ws"])]
    out += [(p.name, game_fields(p)) for p in PROTOCOLS]
    listed = {name for name, _ in out}
    return out + [(sub.name, list(sub.fields.values())) for sub in payload_layers(PROTOCOLS)
                  if sub.name not in listed]


def _type_text(info) -> str:
    return f"{info.ftype} {info.base}" if info.ftype in INTEGER_TYPES else info.ftype


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("proto", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: abbrev, type, name, tab separated; json: a list of objects.")
def fields(proto, fmt):
    """List fields: abbrev, type (integers: with their base), name (tab separated).

    PROTO limits the list to one protocol (blank, ip, udp, frame, _ws, ...).

    \b
    Examples:
      protodump fields
      protodump fields blank | grep state
      protodump fields ip
      protodump fields --format json blank
    """
    groups = field_groups()
    if proto is not None:
        groups = [(name, fs) for name, fs in groups if name == proto]
        if not groups:
            names = ", ".join(dict.fromkeys(name for name, _ in field_groups()))
            raise click.UsageError(f"unknown protocol {proto!r} (known: {names})")
    if fmt == "json":
        rows = [{"abbrev": f.abbrev, "type": f.ftype, "base": f.base if f.ftype in INTEGER_TYPES else None,
                 "name": f.name, "protocol": name, **({"description": f.description} if f.description else {})}
                for name, fs in groups for f in fs]
        click.echo(json.dumps(rows, indent=1))
        return
    for _, fs in groups:
        for f in fs:
            click.echo(f"{f.abbrev}\t{_type_text(f)}\t{f.name}")
