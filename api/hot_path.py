"""The finder of the optional compiled hot path (protodump/compiled.py builds it): a hot module loads compiled only
when a compiled form of its very source is in the cache. Imported by the package before anything else; it costs
nothing when no cache exists."""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

# the modules a Rutentoy/Iceball/Freeblox -V or summary run spends its per-frame time in (cProfile)
HOT = (
    "protodump.session",
    "protodump.capture.clock", "protodump.capture.decode", "protodump.capture.link", "protodump.capture.network",
    "protodump.capture.pcapfile", "protodump.capture.tcp_analysis",
    "protodump.capture.layers", "protodump.capture.layers.common", "protodump.capture.layers.eth",
    "protodump.capture.layers.frame", "protodump.capture.layers.ip", "protodump.capture.layers.tcp",
    "protodump.capture.layers.tcp_info", "protodump.capture.layers.tcp_option_spans",
    "protodump.engine.blocks_bits", "protodump.engine.blocks_cookies", "protodump.engine.blocks_dispatch",
    "protodump.engine.blocks_framing", "protodump.engine.blocks_text", "protodump.engine.channel_protocol",
    "protodump.engine.context", "protodump.engine.dispatch", "protodump.engine.fields", "protodump.engine.jsonscan",
    "protodump.engine.lifetime", "protodump.engine.protocol", "protodump.engine.stream_protocol",
    "protodump.engine.streams", "protodump.engine.strings", "protodump.engine.template", "protodump.engine.tree",
    "protodump.dissectors.websocket", "protodump.dissectors.ws_handshake",
    "protodump.output.frozen", "protodump.output.text",
    "protodump.reassembly.offsets", "protodump.reassembly.tcp",
    # -q -z io,phs's fused machine (analysis/stats_fused.py) and what its WebSocket and ENet models run
    "protodump.analysis.stats_fused", "protodump.analysis.fused_keys", "protodump.analysis.fused_ws",
    "protodump.engine.inflate", "protodump.dissectors.enet", "protodump.dissectors.enet_analysis",
)


def cache_dir() -> Path:
    """This interpreter's directory of compiled modules (one per Python version and machine)."""
    root = os.environ.get("PROTODUMP_COMPILED")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "protodump", "compiled")
    return Path(root) / f"{sys.implementation.cache_tag}-{sys.platform}-{os.uname().machine}"


def source_hash(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:20]


def compiled_path(directory: Path, name: str, source: str) -> Path:
    """Where the compiled form of module `name` built from `source` (a .py path) lives."""
    return directory / f"{name}.{source_hash(source)}{importlib.machinery.EXTENSION_SUFFIXES[0]}"


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds a hot module's source as the other finders do, then its compiled form for that exact source."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.loaded: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name not in HOT:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return spec
        try:
            so = compiled_path(self.directory, name, spec.origin)
        except OSError:
            return spec
        if not so.is_file():
            return spec                 # not built, or built from another version of the source
        self.loaded.append(name)
        return importlib.util.spec_from_file_location(
            name, so, loader=CompiledOrSource(name, str(so), spec.loader),
            submodule_search_locations=spec.submodule_search_locations)


class CompiledOrSource(importlib.machinery.ExtensionFileLoader):
    """Loads the compiled module; one that cannot load (a corrupt or foreign .so) loads from its source instead."""

    def __init__(self, name: str, path: str, source_loader):
        super().__init__(name, path)
        self.source_loader = source_loader
        self.failed = False

    def create_module(self, spec):
        try:
            return super().create_module(spec)
        except (ImportError, OSError):
            self.failed = True
            return None                 # the default module object, filled from the source below

    def exec_module(self, module):
        if not self.failed:
            return super().exec_module(module)
        module.__file__ = self.source_loader.path
        return self.source_loader.exec_module(module)


def install() -> CompiledFinder | None:
    """Put the finder first on sys.meta_path when a cache exists (nothing is done, nothing is hashed, otherwise)."""
    if os.environ.get("PROTODUMP_PURE"):
        return None
    directory = cache_dir()
    if not directory.is_dir():
        return None
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    finder = CompiledFinder(directory)
    sys.meta_path.insert(0, finder)
    return finder
