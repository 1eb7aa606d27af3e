"""Key checking for encode(): which value keys the table asked for, so a misspelt or misplaced key is an error.

The tables' encode() methods read their values with `.get(name, default)`; a RecordingDict records each name asked
at each nesting level (structs as dicts, arrays as lists of dicts). Keys given but never asked are unknown for this
message (a typo, or a field of another packet type); names asked but not given took their defaults (missing).
Generic: no table lists its keys twice.
"""
from __future__ import annotations


class EncodeError(ValueError):
    """Values that do not fit the message: unknown keys, or (strict) missing ones."""


class RecordingDict(dict):
    __slots__ = ("path", "asked", "missing", "children")

    def __init__(self, data: dict, path: str = ""):
        super().__init__(data)
        self.path, self.asked, self.missing, self.children = path, set(), [], []

    def _wrap(self, key, value):
        path = f"{self.path}{key}"
        if isinstance(value, dict):
            value = RecordingDict(value, path + ".")
            self.children.append(value)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            value = [RecordingDict(v, f"{path}[{i}].") for i, v in enumerate(value)]
            self.children.extend(value)
        return value

    def get(self, key, default=None):
        self.asked.add(key)
        if key in self:
            return self._wrap(key, dict.__getitem__(self, key))
        self.missing.append(self.path + str(key))
        return default

    def __getitem__(self, key):
        self.asked.add(key)
        return self._wrap(key, dict.__getitem__(self, key))

    def unknown(self) -> list[str]:
        # "_"-keys are the decoder's own scope entries (a decoded scope can be re-encoded as it is)
        out = [f"{self.path}{k}" for k in self if k not in self.asked and not str(k).startswith("_")]
        for child in self.children:
            out.extend(child.unknown())
        return out

    def all_missing(self) -> list[str]:
        out = list(dict.fromkeys(self.missing))
        for child in self.children:
            out.extend(child.all_missing())
        return out

    def known(self) -> list[str]:
        return sorted(str(k) for k in self.asked)


def check(values: RecordingDict, what: str, strict: bool, unknown_too: bool = True) -> None:
    """Raise EncodeError for unknown keys (unless not unknown_too) and missing ones (strict)."""
    unknown = values.unknown() if unknown_too else []
    if unknown:
        raise EncodeError(f"{what}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                          f"(this message's fields: {', '.join(values.known())})")
    missing = values.all_missing() if strict else []
    if missing:
        raise EncodeError(f"{what}: missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
