"""The range coder (engine/rangecoder.py and its Lua twin lua/rt_rangecoder.lua) against libenet itself.

Debian's libenet7 (through ctypes) is the oracle: every compressed ENet datagram of the captures, thousands of
payloads libenet compressed, and garbage, must give libenet's bytes from the pure-Python decoder, or fail where
libenet returns 0. `decompress` runs libenet's own decoder when it can and the Python one otherwise: both paths
must give the same bytes and errors on the same inputs, and the same decode of whole hostile captures. The Lua
decoder runs standalone under lua5.2 and lua5.4 on the same vectors and must agree with Python."""
from __future__ import annotations

import importlib.util
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import PROTODUMP
from protodump.engine import rangecoder
from protodump.engine.rangecoder import RECEIVE_BUFFER, RangeCoderError, compress, decompress_python

ROOT = Path(__file__).resolve().parent.parent
LIMIT = RECEIVE_BUFFER
DATAGRAM_LIMIT = RECEIVE_BUFFER - 8  # a receiver's limit after the longest header (4 bytes and a checksum)


# --- the oracle (the ctypes binding and the Lua driver live in the benchmark tool) --------------------------------

_spec = importlib.util.spec_from_file_location("bench_rangecoder", ROOT / "tools" / "bench_rangecoder.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
Oracle = bench.Oracle
LIB = bench.load_libenet()
needs_libenet = pytest.mark.skipif(LIB is None, reason="libenet7 is not installed (Debian package libenet7)")


@pytest.fixture(scope="module")
def oracle():
    if LIB is None:
        pytest.skip("libenet7 is not installed (Debian package libenet7)")
    return Oracle(LIB)


def ours(data: bytes, limit: int = LIMIT) -> bytes:
    """Our decoder with libenet's convention: b"" for a failure."""
    try:
        out = decompress_python(data, limit)
    except RangeCoderError:
        return b""
    assert 0 < len(out) <= limit
    return out


# --- vectors -------------------------------------------------------------------------------------------------------


DATAGRAMS = bench.capture_datagrams(bench.CAPTURE_DIRS)


def payload(rnd: random.Random) -> bytes:
    """Data shaped like what ENet compresses: commands (few distinct bytes, repeats), text, or noise."""
    size = rnd.choice([1, 2, 3, rnd.randrange(1, 64), rnd.randrange(1, 1500), rnd.randrange(1, 4000)])
    kind = rnd.randrange(6)
    if kind == 0:
        return rnd.randbytes(size)
    if kind == 1:
        return bytes(rnd.choice(b"\x00\x00\x00\x01\x06\xff\x80") for _ in range(size))
    if kind == 2:
        word = rnd.randbytes(rnd.randrange(1, 12))
        return (word * (size // len(word) + 1))[:size]
    if kind == 3:
        return bytes(rnd.randrange(rnd.randrange(1, 256)) for _ in range(size))
    if kind == 4:
        return bytes(rnd.randrange(2) * 255 for _ in range(size))
    # A byte after many different ones: coded in the order-0 context again and again (its count rescales).
    return bytes(b for r in rnd.randbytes(size // 2 + 1) for b in (r, 0))[:size]


# Garbage libenet decodes to bytes after its uint16 `code` read wrapped (a quotient past 65535): rare in random
# input (about 1 in 7000), found by fuzzing against libenet.
CODE_WRAPS = [bytes.fromhex(h) for h in (
    "3b368300715ad0474f97a10db70c786dab55ac3f9350f95591ab5d8eb5ef042104454e756c6e6cd0290e4f",
    "b8d6e200004d51f4bfb727dc2ae044498978113a384753651c7e24",
    "ca6b7fa5fea1f6cd0a2ee94087c5e4635ff6be1d8a075e4e20bd0438c462406c6f7f14d8ef0079",
    "0b60b442dbd909c60464e90064f3bb5a81281a1525ad932d698b68188877d8",
    "be131400941cde603e3b9674d23466e2be",
    "ac2794f87e00a6",
    "1be40000616877956b453005c3ce0f27663c58",
    "f34271ff82fe004444353210bd",
)]


def garbage(rnd: random.Random, oracle: Oracle | None = None) -> bytes:
    """Random bytes, or real compressed data with a few bits flipped / cut short (deeper into the decoder)."""
    if oracle is None or rnd.random() < 0.5:
        return rnd.randbytes(rnd.randrange(0, 200))
    data = bytearray(oracle.compress(payload(rnd)))
    for _ in range(rnd.randrange(1, 4)):
        if data:
            data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
    if data and rnd.random() < 0.3:
        del data[rnd.randrange(len(data)):]
    return bytes(data)


# --- Python against libenet ----------------------------------------------------------------------------------------


@needs_libenet
def test_real_captures_decompress(oracle):
    """Every compressed datagram of the captures made with libenet decompresses (the *bad* ones are corrupted
    on purpose): at least the 10 of enet-rangecoder.pcap and the 37 of iceball-enet-session.pcap."""
    good = [(name, frame, data) for name, frame, data in DATAGRAMS if "bad" not in name]
    if not good:
        pytest.skip("no ENet capture with compressed datagrams found")
    assert len(good) >= 47
    for name, frame, data in good:
        assert oracle.decompress(data, DATAGRAM_LIMIT), f"{name} frame {frame}"


@needs_libenet
@pytest.mark.parametrize("name,frame,data", DATAGRAMS, ids=[f"{n}#{f}" for n, f, _ in DATAGRAMS])
def test_capture_datagram_equals_libenet(oracle, name, frame, data):
    expected = oracle.decompress(data, DATAGRAM_LIMIT)
    assert ours(data, DATAGRAM_LIMIT) == expected
    if expected:  # real ENet commands, and the data really was compressed
        assert expected[0] & 0x0F in range(1, 13) and len(expected) > len(data) // 2


@needs_libenet
def test_libenet_payloads_seeded(oracle):
    rnd = random.Random(20261121)
    for i in range(2000):
        data = payload(rnd)
        packed = oracle.compress(data)
        assert decompress_python(packed, LIMIT) == data
        if i % 4 == 0:  # our encoder too (slower, and only a test tool)
            assert compress(data) == packed


@needs_libenet
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=1, max_size=3000))
def test_libenet_payloads_hypothesis(oracle, data):
    packed = oracle.compress(data)
    assert decompress_python(packed, LIMIT) == data
    assert compress(data) == packed


@needs_libenet
def test_model_restart_when_symbols_run_out(oracle):
    """Noise uses about 3 symbols per byte: a 3000-byte payload restarts the 4096-symbol model (FREE_SYMBOLS)."""
    data = random.Random(7).randbytes(3000)
    packed = oracle.compress(data)
    assert decompress_python(packed, LIMIT) == data


@needs_libenet
def test_several_buffers_compress_as_one(oracle):
    """ENet compresses a datagram's commands from several buffers: the stream is their concatenation."""
    parts = [b"\x86\x01\x00\x05\x00\x03abc", b"\x07\xff\x00\x01", b"hello hello hello"]
    assert decompress_python(oracle.compress(*parts), LIMIT) == b"".join(parts)


@needs_libenet
def test_garbage_seeded_equals_libenet(oracle):
    rnd = random.Random(99)
    failures = successes = 0
    for _ in range(4000):
        data = garbage(rnd, oracle)
        limit = rnd.choice([LIMIT, 100, 8])
        expected = oracle.decompress(data, limit)
        assert ours(data, limit) == expected, data.hex()
        failures += not expected
        successes += bool(expected)
    assert failures > 100 and successes > 100  # both paths really exercised


@needs_libenet
@pytest.mark.parametrize("data", CODE_WRAPS, ids=lambda d: d[:4].hex())
def test_code_wrap_equals_libenet(oracle, data):
    expected = oracle.decompress(data, LIMIT)
    assert expected and decompress_python(data, LIMIT) == expected


@needs_libenet
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from([LIMIT, 64, 1]))
def test_garbage_hypothesis_equals_libenet(oracle, data, limit):
    assert ours(data, limit) == oracle.decompress(data, limit)


@needs_libenet
def test_output_limit(oracle):
    data = bytes(range(256)) * 4
    packed = oracle.compress(data)
    assert decompress_python(packed, len(data)) == data
    with pytest.raises(RangeCoderError, match="longer than 1023"):
        decompress_python(packed, len(data) - 1)
    assert oracle.decompress(packed, len(data) - 1) == b""  # libenet fails too rather than truncate
    with pytest.raises(RangeCoderError):
        decompress_python(packed, 0)


def test_failures_are_value_errors():
    with pytest.raises(ValueError, match="no compressed data"):
        decompress_python(b"", LIMIT)
    with pytest.raises(RangeCoderError, match="no data before the end"):
        decompress_python(b"\x00\x00\x00\x00", LIMIT)  # the first thing decoded is the end escape
    assert compress(b"") == b""


def test_compress_round_trip_without_libenet():
    rnd = random.Random(3)
    for _ in range(200):
        data = payload(rnd)
        assert decompress_python(compress(data), len(data)) == data


# --- the Lua twin --------------------------------------------------------------------------------------------------

LUAS = ["lua5.2", "lua5.4"]


def python_answer(data: bytes, limit: int) -> str:
    try:
        return "OK " + decompress_python(data, limit).hex()
    except RangeCoderError as e:
        return f"ERR {e}"


def lua_vectors() -> list[tuple[bytes, int]]:
    rnd = random.Random(5)
    vectors = [(data, DATAGRAM_LIMIT) for _, _, data in DATAGRAMS]
    for _ in range(400):
        data = payload(rnd)
        packed = compress(data)
        vectors.append((packed, rnd.choice([LIMIT, len(data), len(data) - 1])))
    vectors += [(garbage(rnd), rnd.choice([LIMIT, 50])) for _ in range(600)]
    vectors += [(data, LIMIT) for data in CODE_WRAPS]
    vectors += [(b"", LIMIT), (b"\x00", LIMIT), (b"\xff" * 8, LIMIT), (compress(b"abc"), 0)]
    return vectors


@pytest.mark.parametrize("lua", LUAS)
def test_lua_equals_python(lua):
    if shutil.which(lua) is None:
        pytest.skip(f"{lua} is not installed (Debian package {lua})")
    vectors = lua_vectors()
    answers, _ = bench.run_lua(lua, vectors)
    assert len(answers) == len(vectors)
    oks = 0
    for (data, limit), answer in zip(vectors, answers):
        assert answer == python_answer(data, limit), data.hex()
        oks += answer.startswith("OK ")
    assert oks > 400


# --- the two paths of `decompress`: libenet's own decoder, else (and on every failure) the Python one -------------

NATIVE = rangecoder._libenet_decoder() if os.environ.get("PROTODUMP_RANGECODER") != "python" else None
LIMITS = [LIMIT, DATAGRAM_LIMIT, 5000, 1 << 20, 100, 8, 1, 0, -1]


@pytest.fixture
def native(monkeypatch):
    """`decompress` with libenet's decoder in use."""
    if NATIVE is None:
        pytest.skip("libenet7 is not installed (Debian package libenet7)")
    monkeypatch.setattr(rangecoder, "_native", NATIVE)


def answer(fn, data, limit) -> str:
    try:
        return "OK " + fn(data, limit).hex()
    except RangeCoderError as e:
        return f"ERR {e}"


def test_decompress_succeeds_through_libenet_alone(native, monkeypatch):
    """A datagram that decodes never reaches the Python decoder when libenet is there."""
    good = [data for name, _, data in DATAGRAMS if "bad" not in name]
    expected = [decompress_python(data, DATAGRAM_LIMIT) for data in good]
    monkeypatch.setattr(rangecoder, "decompress_python", None)
    assert [rangecoder.decompress(data, DATAGRAM_LIMIT) for data in good] == expected


def test_paths_agree_on_every_vector(native):
    """Captures, payloads (exact, short and long limits), garbage and the code wraps, under every kind of limit
    (above the 4 KiB libenet is given, 0, negative): the same bytes or the same error, message included."""
    rnd = random.Random(11)
    kinds = set()
    for data, limit in lua_vectors():
        for lim in (limit, rnd.choice(LIMITS)):
            ours_ = answer(rangecoder.decompress, data, lim)
            assert ours_ == answer(decompress_python, data, lim), (data.hex(), lim)
            kinds.add("OK" if ours_.startswith("OK") else re.sub(r"-?\d+", "N", ours_))
    assert kinds >= {"OK", "ERR no compressed data", "ERR no data before the end symbol",
                     "ERR symbol missing from a context", "ERR decompressed data longer than N bytes"}


def test_paths_agree_past_the_receive_buffer(native, oracle):
    """More than 4 KiB of output (a caller's own limit): libenet is asked for 4 KiB, the Python decoder finishes."""
    data = payload(random.Random(2)) * 4 + b"ab" * 5000
    packed = oracle.compress(data)
    assert rangecoder.decompress(packed, len(data)) == data == decompress_python(packed, len(data))
    for limit in (len(data) - 1, RECEIVE_BUFFER):
        with pytest.raises(RangeCoderError, match=f"longer than {limit} bytes"):
            rangecoder.decompress(packed, limit)


def test_paths_take_any_bytes_like(native, oracle):
    packed = oracle.compress(b"hello hello hello")
    for form in (bytearray, memoryview, bytes):
        assert rangecoder.decompress(form(packed), LIMIT) == b"hello hello hello"
    with pytest.raises(RangeCoderError, match="no compressed data"):
        rangecoder.decompress(bytearray(), LIMIT)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from(LIMITS))
def test_paths_agree_hypothesis(native, data, limit):
    assert answer(rangecoder.decompress, data, limit) == answer(decompress_python, data, limit)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=1, max_size=3000), st.integers(0, 3), st.randoms(use_true_random=False))
def test_paths_agree_on_damaged_payloads_hypothesis(native, oracle, data, flips, rnd):
    packed = bytearray(oracle.compress(data))
    for _ in range(flips):
        packed[rnd.randrange(len(packed))] ^= 1 << rnd.randrange(8)
    limit = rnd.choice([LIMIT, len(data), len(data) - 1])
    assert answer(rangecoder.decompress, bytes(packed), limit) == answer(decompress_python, bytes(packed), limit)


def test_threads_get_their_own_libenet_coder(native):
    """libenet's coder holds the model while it decodes (and ctypes drops the GIL): one per thread."""
    from concurrent.futures import ThreadPoolExecutor
    good = [data for name, _, data in DATAGRAMS if "bad" not in name] * 5
    expected = [decompress_python(data, DATAGRAM_LIMIT) for data in good]
    with ThreadPoolExecutor(4) as pool:
        runs = [pool.submit(lambda: [rangecoder.decompress(d, DATAGRAM_LIMIT) for d in good]) for _ in range(4)]
        assert all(run.result() == expected for run in runs)


@pytest.mark.skipif(NATIVE is None, reason="libenet7 is not installed (Debian package libenet7)")
def test_hostile_captures_decode_the_same_either_way(tmp_path):
    """Whole captures, bad and fuzzed (test_enet's damaged datagrams), and good ones read with checksums on (the
    decoder then starts 4 bytes off and fails): `-T json` is identical with libenet and with
    PROTODUMP_RANGECODER=python, experts included."""
    from test_enet import BAD, CHECKSUM, capture_path, fuzz_datagrams
    from test_lua import write_pcap
    fuzzed = tmp_path / "enet-fuzz.pcap"
    write_pcap(fuzzed, fuzz_datagrams(1) + fuzz_datagrams(2), dport=27016)
    runs = [(capture_path("enet-bad.pcap"), BAD), (fuzzed, BAD),
            (capture_path("enet-rangecoder.pcap"), CHECKSUM), (capture_path("iceball-enet-session.pcap"), CHECKSUM)]
    failures = 0
    for path, args in runs:
        env = {k: v for k, v in os.environ.items() if k != "PROTODUMP_RANGECODER"}
        native, python = (subprocess.run([*PROTODUMP, "-T", "json", *args, str(path)], capture_output=True, text=True,
                                         timeout=300, env=e)
                          for e in (env, {**env, "PROTODUMP_RANGECODER": "python"}))
        assert native.returncode == python.returncode == 0, (native.stderr, python.stderr)
        assert native.stdout == python.stdout and '"enet.compressed"' in native.stdout, path.name
        failures += native.stdout.count("Range-coded data does not decompress")
    assert failures > 10
