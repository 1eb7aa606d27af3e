"""Running shards on Dask (`pip install 'protodump[dask]'`): an existing dask.distributed scheduler, or a local
cluster, decodes the shards of api/shards.py; the client merges what comes back.

    protodump --dask tcp://10.0.0.5:8786 -q -z io,phs -z iceball,types day/     # `dask scheduler` elsewhere
    protodump --dask local -T fields -e frame.number -e blank.seq day/         # a LocalCluster on this machine
    frame = protodump.dask.read("day/", fields=["frame.time", "iceball.id"])   # a dask DataFrame

Failure is loud, never a hang: an unreachable scheduler is a SchedulerError (the CLI: one line, exit 2); a worker
that dies while it holds a shard fails the run with a ShardError naming the shard (the client watches the
scheduler's workers while it waits; a local cluster also sets allowed-failures to 0, so the scheduler gives up on
a shard at its first lost worker instead of retrying it); a run with no worker left fails after `idle` seconds.
"""
from __future__ import annotations

import logging
import time
import uuid

from .shards import Job, Shard, ShardResult, merge_rows, plan, run_shard


class SchedulerError(Exception):
    """No scheduler at the address (or it did not answer in time)."""


class ShardError(Exception):
    """A shard that did not come back: its worker died, or the decode raised."""


def connect(address: str | None = None, *, timeout: float = 5.0, n_workers: int | None = None):
    """A distributed.Client: to the scheduler at `address`, or to a new LocalCluster (None or "local")."""
    import dask
    from distributed import Client, LocalCluster
    if address in (None, "", "local"):
        dask.config.set({"distributed.scheduler.allowed-failures": 0})
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise SchedulerError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def workers(client) -> set:
    """The addresses of the cluster's workers now."""
    return set(client.scheduler_info().get("workers", {}))


def run(shards: list[Shard], job: Job, client, *, poll: float = 0.25, idle: float = 30.0) -> list[ShardResult]:
    """Every shard on the cluster; the results in shard order. ShardError when a shard is lost."""
    from distributed import wait
    token = uuid.uuid4().hex[:8]
    futures = {client.submit(run_shard, shard, job, key=f"protodump-{token}-shard-{shard.index}", pure=False):
               shard for shard in shards}
    results: dict[int, ShardResult] = {}
    holder: dict[str, str] = {}                   # future key -> the worker last seen processing it
    missing: dict[str, int] = {}                  # worker -> polls in a row it was absent while holding a shard
    alone_since = None
    try:
        while len(results) < len(shards):
            pending = [f for f, s in futures.items() if s.index not in results]
            try:
                wait(pending, timeout=poll, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            done = [f for f in pending if f.done()]
            for future in done:
                shard = futures[future]
                try:
                    results[shard.index] = future.result()
                except Exception as exc:            # KilledWorker, or the decode's own error
                    raise ShardError(f"{shard} failed: {type(exc).__name__}: {exc}") from None
            if len(results) == len(shards):
                break
            present = workers(client)
            for future in pending:
                worker = holder.get(future.key)
                if worker is not None and worker not in present and future not in done:
                    missing[worker] = missing.get(worker, 0) + 1
                    if missing[worker] >= 2:           # gone in two polls in a row: not a registration race
                        raise ShardError(f"{futures[future]} lost: worker {worker} died while decoding it")
            for worker, keys in client.processing().items():
                for key in keys:
                    holder[key] = worker
            if present:
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since > idle:
                raise ShardError(f"no Dask worker for {idle:.0f} s: {len(shards) - len(results)} shards not done")
    finally:
        client.cancel(list(futures))
    return [results[s.index] for s in shards]


def read(paths, fields, filter=None, *, per_pdu=False, concatenate=False, prefs=None,  # noqa: A002
         decode_as=None, split=1):
    """A dask DataFrame, one partition per shard (a file of the set; one file in `split` shards of whole
    conversations), the columns and rows of protodump.to_dataframe, each partition in frame order; computed by
    whatever scheduler is active (a distributed.Client, or threads)."""
    import dask.dataframe as dd
    from dask import delayed
    from .frames import make_job, to_pandas
    job = make_job(fields, filter, per_pdu, prefs, decode_as)
    meta = to_pandas([], fields)

    def part(shard):
        return to_pandas(merge_rows([run_shard(shard, job)]), fields)
    shards = plan(paths, concatenate, split=split)
    return dd.from_delayed([delayed(part)(s) for s in shards], meta=meta, verify_meta=False)
