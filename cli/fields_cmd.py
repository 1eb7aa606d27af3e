"""`protodump fields [PROTO]`: every field the dissectors register, like `tshark -G fields`."""
from __future__ import annotations

import click

from ..dissectors import PROTOCOLS


@click.command()
@click.argument("proto", required=False)
def fields(proto):
    """List fields: abbrev, type, name (tab separated).

    \b
    Examples:
      protodump fields
      protodump fields blank | grep state
    """
    for p in PROTOCOLS:
        if proto and p.name != proto:
            continue
        for info in p.fields.values():
            base = f" {info.base}" if info.ftype.startswith(("uint", "int")) else ""
            click.echo(f"{info.abbrev}\t{info.ftype}{base}\t{info.name}")
