"""`protodump check`: CI regression check of recorded captures against their golden outputs."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..analysis.check import FAIL_ON, check_capture, find_captures
from ..output.json_out import JsonWriter
from ..output.progress import track
from ..output.text import TextWriter

EXIT_OK, EXIT_DIFFERENT, EXIT_USAGE, EXIT_UNREADABLE = 0, 1, 2, 3


def VerboseWriter(out):
    """`protodump -V` as a writer: the read command's own writer, so the goldens cannot drift."""
    return TextWriter(out, detail=True)


# Golden file suffix -> renderer; the same pair as tools/make_captures.py (-V first: expert infos are read from it).
FORMS = {".txt": VerboseWriter, ".json": JsonWriter}

_STYLE = {"OK": "green", "UPDATED": "yellow", "CREATED": "yellow", "CHANGED": "red", "NEW": "yellow",
          "ERROR": "red"}


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--update", is_flag=True, help="Rewrite the goldens that differ or are missing.")
@click.option("--fail-on", "fail_on", type=click.Choice(["new", "note", "warn", "error", "none"]), default="new",
              show_default=True, help="Expert infos that fail the check: new = any the golden does not have; "
              "note/warn/error = any at or above that severity; none = never.")
@click.option("--golden", "golden_dir", type=click.Path(file_okay=False),
              help="Golden directory (default: golden/ beside each capture).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N",
              help="Captures checked at once, each by a process of its own (default: one per core).")
def check(paths, update, fail_on, golden_dir, jobs=None):
    """Compare the decode of every capture with its golden outputs.

    PATHS are capture files (pcap, pcapng, gzip) or directories of them. The goldens of CAPTURE are
    golden/CAPTURE.txt (`protodump -V CAPTURE`) and golden/CAPTURE.json (`protodump -T json CAPTURE`).
    Each capture prints OK, CHANGED (with a diff of the first differing region), NEW (no golden yet),
    UPDATED/CREATED (with --update) or ERROR (unreadable).

    \b
    Exit status:
      0  every capture matches its goldens (or they were rewritten by --update)
      1  a golden differs or is missing, or --fail-on found expert infos
      2  usage error
      3  a capture could not be read (wins over 1)

    \b
    Examples:
      protodump check captures/                       # what CI runs
      protodump check captures/blank-bad.pcap         # one capture
      protodump check --update captures/              # accept an intended change (then review git diff)
      protodump check --fail-on warn new-session.pcap.gz --golden goldens/
    """
    captures = find_captures(paths)
    if not captures:
        raise click.UsageError(f"no capture files (*.pcap, *.pcapng, *.gz) in {', '.join(paths)}")
    code = EXIT_OK
    counts: dict[str, int] = {}
    for result in _results(captures, golden_dir, update, jobs):
        counts[result.status] = counts.get(result.status, 0) + 1
        failed = report(result, fail_on)
        if result.status == "ERROR":
            code = EXIT_UNREADABLE
        elif failed and code == EXIT_OK:
            code = EXIT_DIFFERENT
    summary = ", ".join(f"{n} {status.lower()}" for status, n in counts.items())
    click.echo(f"{len(captures)} captures: {summary}")
    sys.exit(code)


def _results(captures, golden_dir, update: bool, jobs: int | None):
    """Each capture's CaptureResult, in order; several captures at once in forked processes (-j), reported in
    the same order as one process reports them."""
    def one(capture, bar=True):
        gdir = Path(golden_dir) if golden_dir else capture.parent / "golden"
        if update:
            gdir.mkdir(parents=True, exist_ok=True)
        return check_capture(capture, gdir, FORMS, update=update,
                             wrap=(lambda stream: _tracked(stream, capture)) if bar else None)
    from ..jobs import default_jobs
    jobs = min(jobs or default_jobs(), len(captures))
    if jobs <= 1:
        yield from map(one, captures)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    global _ONE
    _ONE = one                                  # inherited by the forked workers
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_check_one, capture) for capture in captures]
        for capture, future in zip(captures, futures):
            try:
                yield future.result()
            except BrokenProcessPool:
                click.echo(f"protodump: check -j: a worker died while checking {capture} (or a capture after it)",
                           err=True)
                sys.exit(EXIT_UNREADABLE)


_ONE = None


def _check_one(capture):
    return _ONE(capture, bar=False)


def _tracked(stream, capture):
    """The packet stream with a progress bar (a generator, so the bar closes with the stream)."""
    with track(stream, capture, f"check {capture.name}") as packets:
        yield from packets


def report(result, fail_on: str) -> bool:
    """Print one capture's result; True when it fails the check."""
    name = str(result.capture)
    if result.status == "ERROR":
        click.secho(f"ERROR    {name}: {result.error}", fg="red")
        return True
    failed = result.status in ("CHANGED", "NEW")
    click.secho(f"{result.status:<8} {name} ({result.packets} packets)", fg=_STYLE[result.status])
    for form in result.forms:
        if form.status == "new":
            verb = "written" if result.status == "CREATED" else "missing (protodump check --update writes it)"
            click.echo(f"    {form.golden} {verb}")
        elif form.status == "changed":
            click.echo(f"    {form.golden}: first difference at line {form.first} "
                       f"({form.golden_lines} golden lines, {form.output_lines} now)")
            for line in form.diff:
                color = "red" if line.startswith("-") else "green" if line.startswith("+") else None
                click.secho(f"    {line}", fg=color)
    new = result.new_experts
    if new:
        click.echo(f"    {sum(new.values())} expert infos not in the golden:")
        for (frame, sev, group, msg), n in sorted(new.items())[:10]:
            click.echo(f"      frame {frame}: {sev}/{group}: {msg}" + (f" (x{n})" if n > 1 else ""))
        if fail_on == "new":
            failed = True
    if fail_on in FAIL_ON:
        found = result.at_or_above(FAIL_ON[fail_on])
        if found:
            listed = ", ".join(f"{n} {sev}" for sev, n in sorted(found.items()))
            click.secho(f"    expert infos at or above {fail_on}: {listed}", fg="red")
            failed = True
    return failed
