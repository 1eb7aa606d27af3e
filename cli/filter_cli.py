"""-Y FILTER on the command line: compile it once, or print tshark's kind of error (message, the filter, a caret
under the culprit) and exit 2, with no traceback."""
from __future__ import annotations

import sys

import click

from ..analysis.filter import DisplayFilter, FilterError, compile_filter


def compile_or_exit(text: str | None) -> DisplayFilter | None:
    if text is None:
        return None
    try:
        return compile_filter(text)
    except FilterError as exc:
        click.echo(f"protodump: {exc.message}", err=True)     # tshark names no option
        caret = exc.caret(text)
        if caret:
            click.echo(caret, err=True)
        sys.exit(2)
