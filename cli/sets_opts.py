"""The read command's options for capture sets and clusters: several FILEs or directories, --concatenate,
--dask [ADDRESS], --parquet OUT.

As capture_opts: the options keep their values in the click context, so `read` gains no parameters; read() asks
`input_path` what to read (a path, or a capture.sets.CaptureSet) and lets `divert` run the job on shards (Dask,
Parquet) instead of its own loop.
"""
from __future__ import annotations

import os
import sys

import click

# the read command's option store: one dict in the click context
from .capture_opts import _KEY, _store, quiet_asked


class SetRunError(click.ClickException):
    """A Dask run that cannot start or loses a shard: one line, exit 2."""

    exit_code = 2


def set_options(command):
    """Decorator: adds --concatenate, --dask and --parquet to a click command."""
    options = [
        click.option("--concatenate", is_flag=True, expose_value=False, callback=_store("sets.concatenate"),
                     help="With several files: read them one after another (default: merged in time order, "
                          "as mergecap)."),
        click.option("--dask", "dask_address", metavar="ADDRESS", is_flag=False, flag_value="local",
                     expose_value=False, callback=_store("sets.dask"),
                     help="Decode the files on a Dask cluster (a scheduler's address, or 'local' for a local "
                          "cluster); for -T fields and -z statistics. Needs protodump[dask]."),
        click.option("--parquet", "parquet_path", metavar="OUT", type=click.Path(dir_okay=False),
                     expose_value=False, callback=_store("sets.parquet"),
                     help="With -T fields: write the fields as a typed Parquet table to OUT. Needs protodump[frames]."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _values() -> dict:
    return click.get_current_context().meta.get(_KEY, {})


def _report(path: str, message: str) -> None:
    click.echo(f"protodump: {path}: {message}", err=True)


def input_path(read_file, files):
    """What to read: one path (or None), or a CaptureSet for several files or any directory."""
    from ..capture.sets import CaptureSet
    paths = ([read_file] if read_file else []) + list(files or ())
    address = _values().get("sets.dask")
    if address is not None and os.path.exists(address):        # `--dask FILE`: click took FILE for the address
        raise click.UsageError(f"--dask took {address!r} as a scheduler address: write --dask local {address}")
    if len(paths) == 1 and not os.path.isdir(paths[0]):
        return paths[0]
    if not paths:
        return None
    found = CaptureSet(paths, concatenate=bool(_values().get("sets.concatenate")), on_error=_report)
    if not found.paths:
        raise click.UsageError(f"no capture files in {', '.join(paths)}")
    return found


def is_set(path) -> bool:
    from ..capture.sets import CaptureSet
    return isinstance(path, CaptureSet)


def finish(path) -> None:
    """After a set: exit 2 when a file of it could not be read (as tshark and mergecap)."""
    if is_set(path) and path.errors:
        sys.exit(2)


def divert(path) -> bool:
    """Run the job on shards (--dask, --parquet) and print its output; False when neither option is given."""
    opts = _values()
    address, parquet = opts.get("sets.dask"), opts.get("sets.parquet")
    if address is None and parquet is None:
        return False
    from ..shards import Job, plan
    from .read_cmd import parse_decode_as, parse_prefs
    p = click.get_current_context().params
    if p.get("verbose") or p.get("hexdump") or p.get("output_format") == "json" or p.get("only"):
        raise click.UsageError("--dask and --parquet run -T fields and -z statistics only")
    if p.get("output_format") != "fields" and not p.get("zstats") and parquet is None:
        raise click.UsageError("--dask needs -T fields or -z (with -q to print only statistics)")
    if parquet is not None and p.get("output_format") != "fields":
        raise click.UsageError("--parquet needs -T fields -e FIELD ...")
    from .capture_opts import current
    if current().write_path is not None or current().interface is not None:
        raise click.UsageError("--dask and --parquet read capture files: not with -w or -i")
    if not is_set(path):
        from ..capture.files import CaptureError, open_capture
        try:
            open_capture(path).close()        # a missing or non-capture file: one line, before any shard runs
        except (CaptureError, OSError) as exc:
            raise click.ClickException(str(exc)) from None
    paths = path.paths if is_set(path) else [path]
    concatenate = bool(opts.get("sets.concatenate"))
    job = Job(prefs=parse_prefs(p["prefs"]), decode_as=parse_decode_as(p["decode_as"]), filter=p["display_filter"],
              stats=tuple(p["zstats"]), count=p["count"])
    if parquet is not None:
        job.rows = tuple(p["fields_e"])
    elif not quiet_asked(p):
        job.fields, job.field_options = tuple(p["fields_e"]), tuple(p["fields_opts"])
    errors = []

    def shards(split=1):
        return plan(paths, concatenate, on_error=lambda f, m: (errors.append(f), _report(f, m)), split=split,
                    prefs=job.prefs)
    results = _run(shards, job, address)
    for r in results:
        if r.error:
            _report(paths[0], r.error)       # only a lone file's unsplit shard reads what planning did not
            errors.append(r.error)
    _output(job, results, parquet, p)
    if errors:
        sys.exit(2 if is_set(path) else 1)      # as the local run: a set's read error 2, a cut file 1
    return True


def _run(shards, job, address):
    """shards(split) plans; on Dask, one file is split in as many shards of conversations as there are workers."""
    from ..analysis.stats import StatsError
    from ..shards import run_local
    from ..tap_merge import check_mergeable
    if address is None:
        return run_local(shards(), job)
    from .. import dask as pd_dask
    try:
        client = pd_dask.connect(address)
    except ImportError:
        raise SetRunError("--dask needs Dask: pip install 'protodump[dask]'") from None
    except pd_dask.SchedulerError as exc:
        raise SetRunError(str(exc)) from None
    try:
        planned = shards(max(1, len(pd_dask.workers(client))))
        try:
            check_mergeable(job.stats, planned)
        except StatsError as exc:
            raise click.UsageError(str(exc)) from None
        return pd_dask.run(planned, job, client)
    except pd_dask.ShardError as exc:
        raise SetRunError(str(exc)) from None
    finally:
        cluster = getattr(client, "cluster", None)
        client.close()
        if cluster is not None and address in ("local", ""):
            cluster.close()


def _output(job, results, parquet, p) -> None:
    from ..analysis import stats
    from ..dissectors import PROTOCOLS
    from ..output import fields_out, stats_out
    from ..shards import merge_lines, merge_rows
    out = sys.stdout
    if parquet is not None:
        from ..frames import to_pandas, write_parquet
        try:
            write_parquet(to_pandas(merge_rows(results), job.rows), parquet)
        except ImportError:
            raise SetRunError("--parquet needs pandas and pyarrow: pip install 'protodump[frames]'") from None
    elif job.fields:
        writer = fields_out.make_writer(out, job.fields, job.field_options, PROTOCOLS)
        for line in merge_lines(results):
            _write(writer, line)
        writer.close()
    from ..tap_merge import merge_taps
    try:
        merged = merge_taps(job.stats, results)
    except stats.StatsError as exc:
        raise click.UsageError(str(exc)) from None
    stats_out.write(merged, out, p.get("stats_format") or "text")


def _write(writer, line: str) -> None:
    if not writer.started:
        writer._start()
    writer.out.write(line + "\n")
