"""The `protodump` command. Argument parsing and the choice of output only; the work is in the layers below."""
from __future__ import annotations

import gc
import importlib
import os
import sys

# Start-up allocates many long-lived objects (modules, then the dissector tables): automatic collections during it
# only rescan them (~8 ms of a `protodump -V` run's CPU). Off while these modules import; main() keeps them off
# for `read` (its packet loop runs without them anyway: protodump.session collects by hand).
_GC_WAS_ENABLED = gc.isenabled()
gc.disable()

import click  # noqa: E402

from .. import __version__  # noqa: E402
from . import allocator  # noqa: E402
from . import completion  # noqa: E402
from . import errors  # noqa: E402
from .read_cmd import read  # noqa: E402

# the other sub-commands are imported when named (click's LazyGroup pattern): `protodump FILE` needs none of them
LAZY_COMMANDS = {"lua": ("lua_cmd", "lua"), "fields": ("fields_cmd", "fields"), "check": ("check_cmd", "check"),
                 "report": ("report_cmd", "report"), "glossary": ("glossary_cmd", "glossary"),
                 "prefs": ("glossary_cmd", "prefs")}

if _GC_WAS_ENABLED:
    gc.enable()


class DefaultGroup(click.Group):
    """`protodump FILE ...` means `protodump read FILE ...`, as `tshark -r FILE` needs no sub-command."""

    def names(self) -> set[str]:
        """Every sub-command's name, imported or not."""
        return {*self.commands, *LAZY_COMMANDS}

    def list_commands(self, ctx):
        return sorted(self.names())

    def get_command(self, ctx, cmd_name):
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            module, name = LAZY_COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(f".{module}", __package__), name), cmd_name)
        return self.commands.get(cmd_name)

    def parse_args(self, ctx, args):
        if args and args[0] == "-G":          # tshark: -G REPORT, only as the first option
            args[0] = "glossary"
        elif args and args[0] not in self.names() and args[0] not in ("--help", "-h", "--version"):
            args.insert(0, "read")
        if _held_gc and not (args and args[0] == "read"):
            _release_gc()
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx, incomplete):
        """`protodump <TAB>`: the sub-commands, and capture files (the default command reads one)."""
        items = super().shell_complete(ctx, incomplete)
        names = self.names()
        if any(item.value in names for item in items) and incomplete:
            return items                  # "ch" -> check; files when no sub-command starts so
        return items + completion.capture_file_first(self.list_commands(ctx), incomplete)

    def main(self, *args, **kwargs):
        """Usage errors in tshark's words and exit code (cli/errors.py), not click's."""
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as exc:
            args = kwargs.get("args")
            first = (args if args is not None else sys.argv[1:])[:1]
            if first and first[0] in self.names() and first[0] != "read":   # protodump's own sub-commands
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


_held_gc = False         # main() turned automatic collections off for the start-up of this process


def _release_gc() -> None:
    global _held_gc
    _held_gc = False
    gc.enable()


def main() -> None:
    global _held_gc
    allocator.tune()               # frames' large blocks from the heap, not a fresh mapping each (cli/allocator.py)
    if gc.isenabled():
        _held_gc = True
        gc.disable()
    try:
        cli(prog_name="protodump")
    except BrokenPipeError:        # `protodump ... | head` is normal use
        closed_output()
    finally:
        if _held_gc:
            _release_gc()
