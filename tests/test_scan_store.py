"""engine/fields.py compile_store: the one function a NULL-tree scan calls for a run of fixed fields (or for one
field) puts into the scope exactly what each field's own store() puts there, in the same order, for every run and
every fixed field of every protocol's tables, on any bytes (property-based)."""
import struct

from hypothesis import given, settings, strategies as st

from protodump.dissectors import PROTOCOLS
from protodump.engine.fields import Field, Run, _stores, compile_store


def _tables():
    """Every Run, and every fixed field whose store() stands for its take(), reachable from the protocols."""
    seen, runs, fields = set(), [], []

    def walk(o, depth=0):
        if id(o) in seen or depth > 40:
            return
        seen.add(id(o))
        if isinstance(o, Run):
            runs.append(o)
        if isinstance(o, Field) and o.codes is not None and _stores(o):
            fields.append(o)
        if isinstance(o, dict):
            values = o.values()
        elif isinstance(o, (list, tuple, set, frozenset)):
            values = o
        elif hasattr(o, "__dict__"):
            values = vars(o).values()
        else:
            values = (getattr(o, k, None) for k in getattr(type(o), "__slots__", ()))
        for v in values:
            walk(v, depth + 1)
    for proto in PROTOCOLS:
        walk(proto)
    return runs, fields


RUNS, FIELDS = _tables()


def _by_store(spans, raw) -> list:
    scope: dict = {}
    for f, index, count in spans:
        f.store(scope, raw[index] if count == 1 else raw[index:index + count])
    return list(scope.items())


STORING = [r for r in RUNS if r.stores]      # the runs a scan stores (the others are decoded)


def test_the_tables_have_runs_and_fields_that_compile():
    assert len(STORING) > 50
    assert {type(f).__name__ for r in STORING for f in r.fields} >= {"Number", "BitSplit", "BitFields"}
    assert len(FIELDS) > 100


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_prop_a_runs_compiled_store_equals_its_fields_stores(data):
    run = data.draw(st.sampled_from(STORING))
    raw = run.fmt.unpack_from(data.draw(st.binary(min_size=run.size, max_size=run.size)))
    scope: dict = {}
    run.store_function()(scope, raw)
    assert list(scope.items()) == _by_store([(f, i, c) for f, _, i, c in run.spans], raw)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_prop_a_fields_compiled_store_equals_its_store(data):
    field = data.draw(st.sampled_from(FIELDS))
    fmt = struct.Struct(field.endian + "".join(field.codes))
    raw = fmt.unpack_from(data.draw(st.binary(min_size=fmt.size, max_size=fmt.size)))
    single = len(field.codes) == 1
    put = compile_store([(field, "raw[0]" if single else "raw")])
    scope: dict = {}
    put(scope, raw)
    assert list(scope.items()) == _by_store([(field, 0, len(field.codes))], raw)


def test_every_run_of_every_table_stores_as_its_fields_on_zeros_and_ones():
    for run in STORING:
        for fill in (b"\x00", b"\xff", b"\x5a"):
            raw = run.fmt.unpack_from(fill * run.size)
            scope: dict = {}
            run.store_function()(scope, raw)
            assert list(scope.items()) == _by_store([(f, i, c) for f, _, i, c in run.spans], raw), run.fields
