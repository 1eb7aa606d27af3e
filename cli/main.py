"""The `protodump` command. Argument parsing and the choice of output only; the work is in the layers below."""
from __future__ import annotations

import os
import sys

import click

from .. import __version__
from . import completion
from . import errors
from .check_cmd import check
from .lua_cmd import lua
from .fields_cmd import fields
from .glossary_cmd import glossary, prefs
from .read_cmd import read
from .report_cmd import report


class DefaultGroup(click.Group):
    """`protodump FILE ...` means `protodump read FILE ...`, as `tshark -r FILE` needs no sub-command."""

    def parse_args(self, ctx, args):
        if args and args[0] == "-G":          # tshark: -G REPORT, only as the first option
            args[0] = "glossary"
        elif args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args.insert(0, "read")
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx, incomplete):
        """`protodump <TAB>`: the sub-commands, and capture files (the default command reads one)."""
        items = super().shell_complete(ctx, incomplete)
        if any(item.value in self.commands for item in items) and incomplete:
            return items                  # "ch" -> check; files when no sub-command starts so
        return items + completion.capture_file_first(list(self.commands), incomplete)

    def main(self, *args, **kwargs):
        """Usage errors in tshark's words and exit code (cli/errors.py), not click's."""
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as exc:
            args = kwargs.get("args")
            first = (args if args is not None else sys.argv[1:])[:1]
            if first and first[0] in self.commands and first[0] != "read":   # protodump's own sub-commands
                exc.show()
                sys.exit(exc.exit_code)
            errors.usage_error(exc, lambda: read.get_help(click.Context(read, info_name="protodump read")))
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            closed_output()


def closed_output():
    """The reader of our output went away (`protodump ... | head`): exit quietly with tshark's code 2. Standard
    output is pointed at /dev/null so the interpreter's final flush finds no broken pipe to complain about."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(2)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="protodump")
def cli():
    """Dissect the network protocols of small voxel games, like tshark.

    \b
    Examples:
      protodump captures/blank-server-session.pcap
      protodump -V -c 3 captures/blank-server-session.pcap
      protodump -T json -r capture.pcap -d udp.port==23456,blank
      protodump -o blank.revision:2015 old-session.pcap
      protodump fields blank
      protodump lua install
      protodump check captures/                # CI: compare with the golden outputs
    """


cli.add_command(read)
cli.add_command(lua)
cli.add_command(fields)
cli.add_command(check)
cli.add_command(report)
cli.add_command(glossary)
cli.add_command(prefs)


def main() -> None:
    try:
        cli(prog_name="protodump")
    except BrokenPipeError:        # `protodump ... | head` is normal use
        closed_output()
