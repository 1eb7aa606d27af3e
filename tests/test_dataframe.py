"""Data frames against -T fields on the bundled captures: protodump.to_dataframe, protodump.dask.read and
-T fields --parquet; and the README's worked example."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import CAPTURES_DIR, PROTODUMP, ROOT

pd = pytest.importorskip("pandas")

import protodump  # noqa: E402

CASES = {
    "blank-server-session.pcap": ["frame.number", "frame.len", "ip.src", "udp.srcport", "blank.seq", "blank.type",
                                  "blank.login.name", "blank.tag", "frame.time_epoch"],
    "iceball-enet-session.pcap": ["frame.number", "ip.dst", "udp.dstport", "enet.command.type", "iceball.id",
                                  "iceball.lua_id", "_ws.expert.message"],
    "rutentoy-segmentation.pcap": ["frame.number", "tcp.srcport", "tcp.len", "rutentoy", "tcp.stream"],
    "freeblox-session.pcap": ["frame.number", "frame.cap_len", "tcp.seq", "freeblox"],
}


def fields_text(capture, fields, *extra):
    args = ["-T", "fields", "-E", "occurrence=f", *extra, *(a for f in fields for a in ("-e", f)), capture]
    out = subprocess.run([*PROTODUMP, *args], cwd=CAPTURES_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [line.split("\t") for line in out.stdout.splitlines()]


def same(value, text: str) -> bool:
    if pd.isna(value):
        return text == ""
    if isinstance(value, int):                      # an Int64 column: -T fields may print it in hex
        return int(text, 0) == value
    return str(value) == text


def check_against_fields(frame, capture, fields, *extra):
    rows = fields_text(capture, fields, *extra)
    assert len(frame) == len(rows) > 0
    for column, name in enumerate(fields):
        values = frame[name].tolist()
        bad = [(i, v, r[column]) for i, (v, r) in enumerate(zip(values, rows)) if not same(v, r[column])]
        assert not bad, f"{capture} {name}: {bad[:3]}"


@pytest.mark.parametrize("capture", sorted(CASES))
def test_dataframe_equals_fields_output(capture):
    fields = CASES[capture]
    frame = protodump.to_dataframe(CAPTURES_DIR / capture, fields=fields)
    check_against_fields(frame, capture, fields)
    assert str(frame["frame.number"].dtype) == "Int64"


def test_types_and_filter():
    frame = protodump.to_dataframe(CAPTURES_DIR / "blank-server-session.pcap",
                                   fields=["frame.time", "frame.time_epoch", "blank.seq", "blank.login.name"],
                                   filter="blank.type == 1")
    assert str(frame["frame.time"].dtype) == "datetime64[ns, UTC]"
    assert str(frame["blank.seq"].dtype) == "Int64"
    assert str(frame["blank.login.name"].dtype) == "string"
    epoch = frame["frame.time"].astype("int64") / 1e9
    assert (abs(epoch - frame["frame.time_epoch"].astype(float)) < 1e-6).all()
    check_against_fields(frame, "blank-server-session.pcap", ["frame.time_epoch", "blank.seq", "blank.login.name"],
                         "-Y", "blank.type == 1")
    with pytest.raises(ValueError, match="unknown field"):
        protodump.to_dataframe(CAPTURES_DIR / "blank-2015.pcap", fields=["blank.nope"])


def test_per_pdu_rows():
    capture = CAPTURES_DIR / "rutentoy-segmentation.pcap"
    pdus = protodump.to_dataframe(capture, fields=["frame.number", "pdu.proto", "pdu.len", "pdu.type",
                                                   "rutentoy.opcode"], per_pdu=True)
    counts = fields_text("rutentoy-segmentation.pcap", ["frame.number", "rutentoy.opcode"], "-E", "occurrence=a")
    opcodes = [(int(n), int(op, 0)) for n, ops in counts if ops for op in ops.split(",")]
    assert list(zip(pdus["frame.number"], pdus["rutentoy.opcode"])) == opcodes     # one row per PDU, its own field
    assert len(opcodes) > len({n for n, _ in opcodes})
    assert set(pdus["pdu.proto"]) == {"rutentoy"}
    assert pdus["pdu.len"].min() > 0 and pdus["pdu.type"].str.contains(r"\(\d+\)").all()


def test_set_and_dask_read_and_parquet(tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    files = [CAPTURES_DIR / f for f in ("blank-2015.pcap", "blank-sequence.pcap", "iceball-tcp-session.pcap")]
    fields = ["frame.number", "frame.time", "ip.src", "tcp.srcport", "udp.srcport", "blank.seq", "iceball.id"]
    frame = protodump.to_dataframe(files, fields=fields, filter="!tcp.len == 0")
    from protodump import dask as protodump_dask
    lazy = protodump_dask.read(files, fields=fields, filter="!tcp.len == 0")
    assert isinstance(lazy, dd.DataFrame)
    assert lazy.npartitions == 2          # the two blank files share a conversation: one shard
    got = lazy.compute(scheduler="sync").sort_values("frame.number").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, frame)
    split = protodump_dask.read(files[2], fields=fields, split=2)
    assert split.npartitions >= 1
    alone = protodump.to_dataframe(files[2], fields=fields)
    pd.testing.assert_frame_equal(split.compute(scheduler="sync").sort_values("frame.number").reset_index(drop=True),
                                  alone)
    out = tmp_path / "set.parquet"
    columns = [f for f in fields if f != "frame.time"]         # -e knows no frame.time (yet): the API does
    run = subprocess.run([*PROTODUMP, "-T", "fields", *(a for f in columns for a in ("-e", f)), "-Y", "!tcp.len == 0",
                          "--parquet", str(out), *map(str, files)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    pd.testing.assert_frame_equal(pd.read_parquet(out), frame[columns])
    text = subprocess.run([*PROTODUMP, "-T", "fields", "-E", "occurrence=f", *(a for f in columns for a in ("-e", f)),
                           "-Y", "!tcp.len == 0", *map(str, files)], capture_output=True, text=True).stdout
    rows = [line.split("\t") for line in text.splitlines()]
    assert len(rows) == len(frame)
    for column, name in enumerate(columns):
        assert all(same(v, r[column]) for v, r in zip(frame[name].tolist(), rows)), name


def test_readme_worked_example():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Data frames"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    expected = re.search(r"```python\n.*?```\n\n```\n(.*?)```", section, re.S).group(1)
    result = subprocess.run([*PROTODUMP[:1], "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected
