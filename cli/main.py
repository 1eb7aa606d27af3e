"""The `protodump` command. Argument parsing and the choice of output only; the work is in the layers below."""
from __future__ import annotations

import sys

import click

from .. import __version__
from .check_cmd import check
from .lua_cmd import lua
from .fields_cmd import fields
from .read_cmd import read
from .report_cmd import report


class DefaultGroup(click.Group):
    """`protodump FILE ...` means `protodump read FILE ...`, as `tshark -r FILE` needs no sub-command."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args.insert(0, "read")
        return super().parse_args(ctx, args)


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


def main() -> None:
    try:
        cli(prog_name="protodump")
    except BrokenPipeError:        # `protodump ... | head` is normal use
        sys.stderr.close()
        sys.exit(0)
