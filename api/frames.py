"""Data frames for analysts: a capture or a capture set as a pandas DataFrame (one row per packet, or per PDU).

    protodump.to_dataframe(paths, fields=["frame.time", "ip.src", "blank.type"], filter="blank")

Columns are typed from the field tables: integer fields are nullable Int64, floats float64, booleans boolean,
everything else string (the -T fields text); `frame.time` is a UTC timestamp. A field with several occurrences
in a row gives its first (-E occurrence=f). With per_pdu=True there is one row per game-protocol layer (a PDU)
and three more columns can be asked for: `pdu.proto` (the layer's protocol), `pdu.len` (its bytes) and
`pdu.type` (its message type as `-z <proto>,types` names it, "NAME (id)"); a game field then comes from that layer
only, a standard field from its frame.

The rows come from the same shards as --dask (api/shards.py), so `protodump.dask.read` builds the same
frame partition by partition. pandas and pyarrow are the `frames` extra.
"""
from __future__ import annotations

PSEUDO = {"frame.time": "time", "pdu.proto": "string", "pdu.len": "Int64", "pdu.type": "string"}


def column_types(columns) -> dict[str, str]:
    """Column -> pandas dtype; ValueError (one line) for an unknown field."""
    from .dissectors import PROTOCOLS
    from .output.fields_out import known_fields
    known = known_fields(PROTOCOLS)
    types = {}
    for name in columns:
        if name in PSEUDO:
            types[name] = PSEUDO[name]
            continue
        info = known.get(name)
        if info is None:
            raise ValueError(f"unknown field: {name}")
        t = info.ftype
        types[name] = ("Int64" if t.startswith(("uint", "int")) else "float64" if t in ("float", "double")
                       else "boolean" if t == "boolean" else "string")
    return types


def row_maker(columns, per_pdu: bool = False):
    """packet -> list of row tuples (one, or one per game layer)."""
    from .output.fields_out import field_values, item_value
    types = column_types(columns)

    def typed(name, items, packet):
        t = types[name]
        if not items:
            return None
        item = items[0]
        if t in ("Int64", "float64", "boolean") and isinstance(item.value, (int, float)):
            return item.value
        return item_value(item)

    def standard(name, packet):
        if name == "frame.time":
            return packet.frame.ts_ns
        if types[name] == "string" and name.startswith("_ws."):
            values = field_values(packet, name)
            return values[0] if values else None
        return typed(name, packet.index().get(name), packet)

    kinds: dict = {}

    def pdu_type(layer):
        tap = kinds.get(layer.proto)
        if tap is None:
            from .analysis.stats import StatsError, make_tap
            try:
                tap = kinds[layer.proto] = make_tap(f"{layer.proto},types")
            except StatsError:
                tap = kinds[layer.proto] = False
        return tap.layer_types(layer)[0] if tap else None

    def per_packet(packet):
        return [tuple(standard(name, packet) for name in columns)]

    def per_layer(packet):
        rows = []
        for layer in packet.games:
            own = None
            row = []
            for name in columns:
                if name == "pdu.proto":
                    row.append(layer.proto)
                elif name == "pdu.len":
                    row.append(layer.item.length)
                elif name == "pdu.type":
                    row.append(pdu_type(layer))
                elif name.split(".", 1)[0] == layer.proto or name == layer.proto:
                    if own is None:
                        own = {}
                        for item in layer.item.walk():
                            if item.field is not None:
                                own.setdefault(item.field.abbrev, []).append(item)
                    row.append(typed(name, own.get(name), packet))
                elif any(name.split(".", 1)[0] == g.proto for g in packet.games):
                    row.append(None)            # another game layer's field: not this PDU's
                else:
                    row.append(standard(name, packet))
            rows.append(tuple(row))
        return rows

    return per_layer if per_pdu else per_packet


def to_pandas(rows, columns):
    """Rows (tuples) -> a typed pandas DataFrame."""
    import pandas as pd
    types = column_types(columns)
    frame = pd.DataFrame.from_records(list(rows), columns=list(columns))
    for name, t in types.items():
        if t == "time":
            frame[name] = pd.to_datetime(frame[name].astype("Int64"), unit="ns", utc=True)
        else:
            frame[name] = frame[name].astype(t)
    return frame


def make_job(fields, filter=None, per_pdu=False, prefs=None, decode_as=None):  # noqa: A002
    from .shards import Job
    if not fields:
        raise ValueError("no fields: give fields=[...]")
    column_types(fields)              # unknown fields fail here, before any shard runs
    return Job(prefs=dict(prefs or {}), decode_as=dict(decode_as or {}), filter=filter, rows=tuple(fields),
               per_pdu=per_pdu)


def to_dataframe(paths, fields, filter=None, *, per_pdu=False, concatenate=False, prefs=None,  # noqa: A002
                 decode_as=None):
    """A pandas DataFrame of a capture or capture set (files and directories, merged in time order as mergecap,
    or one after another with concatenate=True): one row per packet passing `filter` (per PDU with
    per_pdu=True), one typed column per field."""
    from .shards import merge_rows, plan, run_local
    job = make_job(fields, filter, per_pdu, prefs, decode_as)
    return to_pandas(merge_rows(run_local(plan(paths, concatenate), job)), fields)


def write_parquet(frame, path) -> None:
    """A data frame to a Parquet file, through pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
