"""The read command's --export-objects PROTO,DIR (tshark's option, for the game protocols).

Kept out of read_cmd.py as capture_opts is: the option stores its value in the click context, `current()` gives
read() the exporter (or None) to feed every packet, `finish()` prints its notes on stderr.
"""
from __future__ import annotations

import click

from ..analysis.export_objects import PROTOCOLS, ObjectExporter

_KEY = "protodump.export_objects"


def _store(ctx, _param, value):
    ctx.meta[_KEY] = value


def export_options(command):
    """Decorator: adds --export-objects without adding a parameter to the command's function."""
    return click.option(
        "--export-objects", "export_objects", metavar="PROTO,DIR", expose_value=False, callback=_store,
        help=f"Write every reassembled object of PROTO ({'|'.join(PROTOCOLS)}) into DIR (created if needed): "
             "Iceball files inflated, Rutentoy textures (QOI and PNG), Freeblox assets, blank chunks.")(command)


def current() -> ObjectExporter | None:
    value = click.get_current_context().meta.get(_KEY)
    if not value:
        return None
    proto, sep, folder = value.partition(",")
    if not sep or not folder:
        raise click.BadParameter(f"{value!r}: expected PROTO,DIR", param_hint="--export-objects")
    try:
        return ObjectExporter(proto.strip(), folder)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--export-objects") from None
    except OSError as exc:
        raise click.BadParameter(f"cannot create {folder}: {exc.strerror or exc}",
                                 param_hint="--export-objects") from None


def finish(exporter: ObjectExporter | None) -> None:
    if exporter is not None:
        for note in exporter.finish():
            click.echo(f"protodump: --export-objects: {note}", err=True)
