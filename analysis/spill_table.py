"""A table of counters that keeps its newest entries in memory and the rest on disk, so that a statistic over a
capture of a million conversations runs in bounded memory (issue 15).

`SpillTable` is a dict of key -> entry (a list of numbers) that a tap updates in place, as it would any dict.
`add()` puts a new entry; when the table already holds `limit` of them, every entry first goes into a private
sqlite database on disk (`sqlite3.connect("")`: a temporary file, deleted when the table is) through one upsert
that adds the counters to the row already there, and the dict starts empty again. Once spilled, `sorted_rows()` gives every entry, merged,
in the order the tap asks, sorted by sqlite on disk (its page cache is bounded).

sqlite is the standard library's on-disk table with upsert and an external sort; nothing else here is
hand-written beyond the SQL that says how two entries of one key add up.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

CACHE_KIB = 4096        # sqlite's page cache for one table (its sorter spills to disk beyond it)


class SpillTable(dict):
    """key (a flat tuple of `keys` names) -> entry (a list, one value per name of `columns`).

    `merge` is the SET clause of the upsert that folds an entry (sqlite's `excluded`) into the row on disk,
    `order` the ORDER BY of `sorted_rows`.
    """

    def __init__(self, keys: tuple[str, ...], columns: tuple[str, ...], merge: str, order: str, limit: float):
        super().__init__()
        self.keys, self.columns, self.merge, self.order, self.limit = keys, columns, merge, order, limit
        self.db: sqlite3.Connection | None = None

    def add(self, key: tuple, entry: list) -> list:
        """A new key's entry (the table spills first when it is full)."""
        if len(self) >= self.limit:
            self.spill()
        self[key] = entry
        return entry

    def spill(self) -> None:
        """Move every entry in memory to the table on disk, adding each to the row of its key there."""
        if not self:
            return
        if self.db is None:
            self.db = sqlite3.connect("")
            self.db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            columns = ", ".join(self.keys + self.columns)
            self.db.execute(f"CREATE TABLE spill ({columns}, PRIMARY KEY ({', '.join(self.keys)})) WITHOUT ROWID")
            marks = ", ".join("?" * (len(self.keys) + len(self.columns)))
            self.upsert = (f"INSERT INTO spill VALUES ({marks}) "
                           f"ON CONFLICT ({', '.join(self.keys)}) DO UPDATE SET {self.merge}")
        with self.db:
            self.db.executemany(self.upsert, (key + tuple(entry) for key, entry in self.items()))
        self.clear()

    @property
    def spilled(self) -> bool:
        return self.db is not None

    def sorted_rows(self) -> Iterator[tuple[tuple, list]]:
        """Every (key, entry) of a spilled table, merged across spills, in the table's order."""
        self.spill()
        n = len(self.keys)
        for row in self.db.execute(f"SELECT * FROM spill ORDER BY {self.order}"):
            yield row[:n], list(row[n:])

    def count(self) -> int:
        """Every key's row, on disk and in memory (after this, all are on disk when the table spilled)."""
        if self.db is None:
            return len(self)
        self.spill()
        return self.db.execute("SELECT count(*) FROM spill").fetchone()[0]

    def __reduce__(self):
        """A table moves to a -j or Dask worker before its first entry, and back with its shard's entries (a
        shard's table never spills: the parent merges them in memory)."""
        if self.db is not None:
            raise TypeError("a spilled SpillTable stays in its process")
        return (_rebuild, (self.keys, self.columns, self.merge, self.order, self.limit, dict(self)))


def _rebuild(keys, columns, merge, order, limit, entries) -> SpillTable:
    table = SpillTable(keys, columns, merge, order, limit)
    table.update(entries)
    return table


class LazyRows(list):
    """Rows made while they are read, as often as they are read: a statistic's rows from a spilled table.

    It is a list so that json's encoder, which takes lists and tuples only as arrays, writes it row by row
    (json.JSONEncoder.iterencode with an indent is pure Python and iterates it); the list itself stays empty.
    """

    def __init__(self, make: Callable[[], Iterator], count: int):
        super().__init__()
        self._make, self._count = make, count

    def __iter__(self):
        return self._make()

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._count
        for n, row in enumerate(self):
            if n == index:
                return row
        raise IndexError(index)

    def __eq__(self, other):
        return list(iter(self)) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"<LazyRows: {self._count} rows>"

    def __reduce__(self):
        return (list, (list(iter(self)),))
