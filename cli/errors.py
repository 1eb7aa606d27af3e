"""Bad command lines as tshark 4.0 reports them: its one line on standard error (then, for an unknown option or a
missing argument, the usage, as tshark prints its own), and its exit code (1), in place of click's three lines
and exit code 2.

tshark's wording (tshark.c, measured on 4.0.17):
- `unrecognized option: bogus` / `option requires an argument: c`, a blank line, the usage;
- `Invalid -T parameter "x"; it must be one of:` and the formats, `Invalid time stamp type "x"; it must be one
  of:` and the formats, `Invalid -z argument "x"; it must be one of:` and the statistics;
- `Invalid seconds type "x"; it must be one of:` and the two types (-u);
- `The specified packet count "abc" isn't a decimal number` (and "is zero", "is a negative number");
- `-o flag "x:y" specifies unknown preference`, `Invalid -o flag "x"`;
- `Invalid selector number "x"`, `Parameter "x" doesn't follow the template ...` (-d).
"""
from __future__ import annotations

import sys

import click

PROG = "protodump"

# tshark's -T list (tshark.c), for the forms protodump writes
OUTPUT_FORMAT_HELP = {
    "fields": ('"fields"  The values of fields specified with the -e option, in a form',
               '          specified by the -E option.'),
    "pdml": ('"pdml"    Packet Details Markup Language, an XML-based format for the',
             '          details of a decoded packet. This information is equivalent to',
             '          the packet details printed with the -V flag.'),
    "psml": ('"psml"    Packet Summary Markup Language, an XML-based format for the',
             '          summary information of a decoded packet. This information is',
             '          equivalent to the information shown in the one-line summary',
             '          printed by default.'),
    "json": ('"json"    Packet Summary, an JSON-based format for the details',
             '          summary information of a decoded packet. This information is ',
             '          equivalent to the packet details printed with the -V flag.'),
    "jsonraw": ('"jsonraw" Packet Details, a JSON-based format for machine parsing',
                '          including only raw hex decoded fields (same as -T json -x but',
                '          without text decoding, only raw fields included). '),
    "ek": ('"ek"      Packet Details, an EK JSON-based format for the bulk insert ',
           '          into elastic search cluster. This information is ',
           '          equivalent to the packet details printed with the -V flag.'),
    "text": ('"text"    Text of a human-readable one-line summary of each of the',
             '          packets, or a multi-line view of the details of each of the',
             '          packets, depending on whether the -V flag was specified.',
             '          This is the default.'),
    "tabs": ('"tabs"    Similar to the text report except that each column of the',
             '          human-readable one-line summary is delimited with an ASCII',
             '          horizontal tab character.'),
}

TIME_FORMAT_HELP = (('"a"    for absolute', "a"), ('"ad"   for absolute with YYYY-MM-DD date', "ad"),
                    ('"adoy" for absolute with YYYY/DOY date', "adoy"), ('"d"    for delta', "d"),
                    ('"dd"   for delta displayed', "dd"), ('"e"    for epoch', "e"), ('"r"    for relative', "r"),
                    ('"u"    for absolute UTC', "u"), ('"ud"   for absolute UTC with YYYY-MM-DD date', "ud"),
                    ('"udoy" for absolute UTC with YYYY/DOY date', "udoy"))


def source_name(path: str) -> str:
    """How tshark names a capture source in its errors ("-": the standard input)."""
    return "The standard input" if path == "-" else f'The file "{path}"'


def fail(message: str, code: int = 1, more: list[str] | tuple[str, ...] = ()) -> None:
    """tshark's error: `protodump: MESSAGE` (and the lines after it) on standard error, exit `code`."""
    click.echo(f"{PROG}: {message}", err=True)
    for line in more:
        click.echo(line, err=True)
    sys.exit(code)


def choice(names, complain):
    """An option's callback that accepts one of `names` and calls `complain(value)` for anything else (and its
    shell completion)."""
    def check(_ctx, _param, value):
        if value is not None and value not in names:
            complain(value)
        return value

    def complete(_ctx, _param, incomplete):
        return [click.shell_completion.CompletionItem(n) for n in names if n.startswith(incomplete)]
    return check, complete


def output_format(value: str, formats) -> None:
    fail(f'Invalid -T parameter "{value}"; it must be one of:', 1,
         ["\t" + line for name, lines in OUTPUT_FORMAT_HELP.items() if name in formats for line in lines])


def time_format(value: str) -> None:
    fail(f'Invalid time stamp type "{value}"; it must be one of:', 1, ["\t" + line for line, _ in TIME_FORMAT_HELP])


SECONDS_FORMAT_HELP = (('"s"   for seconds', "s"), ('"hms" for hours, minutes and seconds', "hms"))


def seconds_format(value: str) -> None:
    fail(f'Invalid seconds type "{value}"; it must be one of:', 1,
         ["\t" + line for line, _ in SECONDS_FORMAT_HELP])


def packet_count(_ctx, _param, value):
    """-c COUNT, checked as tshark checks it (get_positive_int)."""
    if value is None:
        return None
    text = value.strip()
    try:
        number = int(text, 10)
    except ValueError:
        fail(f'The specified packet count "{value}" isn\'t a decimal number')
    if number < 0:
        fail(f'The specified packet count "{value}" is a negative number')
    if number == 0:
        fail("The specified packet count is zero")
    return number


def statistic(arg: str, names) -> None:
    fail(f'Invalid -z argument "{arg}"; it must be one of:', 1, ["     " + name for name in sorted(names)])


def usage_error(exc: click.UsageError, default_help) -> None:
    """A click usage error in tshark's words and exit code; `default_help()`: the usage when click has no context
    (an option missing its argument)."""
    ctx = exc.ctx
    usage = ctx.get_help() if ctx is not None else default_help()
    if isinstance(exc, click.NoSuchOption):
        fail(f"unrecognized option: {exc.option_name.lstrip('-')}", 1, ["", usage])
    if isinstance(exc, click.BadOptionUsage) and "requires an argument" in exc.message:
        fail(f"option requires an argument: {exc.option_name.lstrip('-')}", 1, ["", usage])
    # a bad option value: tshark's 1; protodump's own checks of a whole command line keep exit code 2
    fail(exc.format_message(), 2 if type(exc) is click.UsageError else 1)


HEXDUMP_HELP = ("", f"{PROG}: Valid --hexdump <hexoption> values include:", "", "Data source options:",
                "  all                      add hexdump, dump all data sources (-x default)",
                "  frames                   add hexdump, dump only frame data source", "", "ASCII options:",
                "  ascii                    add hexdump, include ASCII dump text (-x default)",
                "  delimit                  add hexdump, delimit ASCII dump text with '|' characters",
                "  noascii                  add hexdump, exclude ASCII dump text", "", "Miscellaneous:",
                "  help                     display this help and exit", "", "Example:", "",
                f"    $ {PROG} ... --hexdump frames --hexdump delimit ...", "")


def hexdump_options(values) -> tuple[str, str] | None:
    """tshark's --hexdump (repeatable, the last of each kind wins): (data sources, ASCII column), e.g. ("frames",
    "delimit"); None without any. `help` prints the choices (standard output, exit 0); anything else is tshark's
    error, exit 1."""
    if not values:
        return None
    sources, ascii = "all", "ascii"
    for value in values:
        if value == "help":
            click.echo("\n".join(HEXDUMP_HELP))
            sys.exit(0)
        if value in ("all", "frames"):
            sources = value
        elif value in ("ascii", "delimit", "noascii"):
            ascii = value
        else:
            fail(f'"{value}" is an invalid value for --hexdump <hexoption>', 1,
                 [f"For valid <hexoption> values enter: {PROG} --hexdump help"])
    return sources, ascii

