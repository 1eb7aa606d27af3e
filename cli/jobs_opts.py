"""-j N / --jobs N for the read command: how many processes decode a capture (api/jobs.py).

tshark's -j takes protocol names (-T json -j "ip udp"); a number there is a process count, never a protocol. Without
-j, a file of a few megabytes or more is read by as many processes as there are cores."""
from __future__ import annotations

import click

_KEY = "protodump.jobs"


def jobs_option(command):
    """Decorator: --jobs N (also -j N), stored in the context, not passed to the command's function."""
    def store(ctx, _param, value):
        if value is not None:
            ctx.meta[_KEY] = value
        return value
    return click.option("--jobs", "jobs", type=click.IntRange(min=1), expose_value=False, callback=store,
                        metavar="N", help="Processes that decode the capture (also -j N; default: one per core "
                        "for files of 4 MB or more). The output is the same as one process's.")(command)


def take_count(json_filter):
    """-j N (a number) is the process count: stored, and no -j protocol filter."""
    if json_filter is not None and json_filter.strip().isdigit():
        n = int(json_filter)
        if n < 1:
            raise click.BadParameter(f"{json_filter!r}: at least 1 process", param_hint="-j")
        click.get_current_context().meta[_KEY] = n
        return None
    return json_filter


def divert(path, capture, **kw) -> bool:
    """Run the command on several processes (api/jobs.py); False when one process runs it."""
    n = click.get_current_context().meta.get(_KEY)
    explicit = n is not None
    if n == 1:               # one process asked for: api/jobs.py is not even imported (start-up time)
        return False
    from ..jobs import Run, default_jobs, run, unsplittable
    n = n if explicit else default_jobs()
    source = kw["source"]
    if unsplittable(n, path, two_pass=kw.pop("two_pass"), live=source.interface is not None,
                    exporter=kw.pop("exporter"), line_buffered=kw.pop("line_buffered"), fake_items=kw.pop("fake_items"),
                    display_filter=kw.pop("display_filter"), zstats=kw["zstats"], write_path=source.write_path):
        return False
    if not run(n, Run(path=path, **kw), explicit):
        return False
    if hasattr(capture, "close"):
        capture.close()
    return True
