"""What pyproject.toml declares: every runtime dependency is imported by the package (none declared for nothing),
heavy ones stay in extras."""
from __future__ import annotations

import re
import tomllib

from conftest import ROOT

PACKAGE_DIRS = ["api", "capture", "engine", "reassembly", "dissectors", "analysis", "output", "cli"]
IMPORT_NAMES = {"xxhash": "xxhash", "dpkt": "dpkt", "scapy": "scapy", "rich": "rich", "click": "click"}


def test_every_dependency_is_imported():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=\[ ]", d)[0] for d in project["dependencies"]]
    sources = "\n".join(p.read_text() for d in PACKAGE_DIRS for p in (ROOT / d).glob("*.py"))
    for name in names:
        module = IMPORT_NAMES.get(name, name)
        assert re.search(rf"^\s*(import|from) {module}\b", sources, re.M), f"{name} is declared but never imported"
    assert "qoi" not in names and "pyshark" not in names and "numpy" not in names
