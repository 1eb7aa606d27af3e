"""--export-objects PROTO,DIR: every object a game session transferred, written as files (tshark's
--export-objects, for the game protocols).

  iceball   each file transfer that ended complete: the inflated file (maps, Lua scripts, images) under the name
            the client requested; a file that does not inflate is written as it came (".zlib")
  rutentoy  each reassembled texture as QOI (".qoi") and, when it decodes, as PNG (".png", the `qoi` and Pillow
            libraries), named by cookie and xxHash32; a hash that does not match the announced digest is noted
  freeblox  each STREAM_ASSET buffer under its asset name, with the extension of its detected format
  blank     each reassembled chunk transfer, raw (".zlib") and inflated (".bin"), named by the chunk's
            coordinates (from its Chunk Begin), transmission id and frame

Objects are read from what the dissectors already built (the packet's data sources and tree), never decoded
again. Names from the wire go through analysis.safe_names (no path ever leaves DIR). Output is bounded: at most
MAX_OBJECTS files and MAX_BYTES bytes; what is given up is said in `notes` (printed on stderr by the CLI).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .safe_names import SafeFolder
from .tree_walk import child, child_value, value_name

PROTOCOLS = ("iceball", "rutentoy", "freeblox", "blank")
MAX_OBJECTS = 10_000
MAX_BYTES = 1 << 30
EXTENSIONS = {"PNG": ".png", "JPEG": ".jpg", "GIF": ".gif", "QOI": ".qoi", "OGG": ".ogg", "WAV": ".wav",
              "JSON": ".json", "GLB": ".glb", "GLTF BINARY": ".glb"}


@dataclass
class GameObject:
    """One reassembled object: where it ended, what it is called on the wire, its bytes (and variants)."""
    frame: int
    proto: str
    name: str                      # the name on the wire (or one made from its keys)
    content_type: str
    data: bytes
    suffix: str = ""               # added to the massaged name (".zlib", ".qoi")
    extra: dict = field(default_factory=dict)


def _sources(packet, *names: str) -> list[bytes]:
    return [s.data for s in packet.sources if s.name in names]


def iceball_objects(packet, _memo):
    compressed = iter(_sources(packet, "Reassembled file", "Inflated file (zlib)"))   # a file's zlib stream
    inflated = iter(_sources(packet, "Inflated file"))
    for layer in packet.games:
        if layer.proto != "iceball":
            continue
        for node in layer.item.walk():
            if node.field is None or node.field.abbrev != "iceball.file" or child_value(node, "iceball.file.blocks") is None:
                continue                       # only FILE_END nodes of complete transfers made sources
            whole = next(compressed, None)
            if whole is None:
                return
            name = child_value(node, "iceball.file.name") or "file"
            type_name = value_name(child(node, "iceball.file.type"))
            if child_value(node, "iceball.file.inflated_size") is not None:
                data = next(inflated, None)
                if data is not None:
                    yield GameObject(packet.number, "iceball", name, type_name, data,
                                     extra={"compressed_size": len(whole)})
                    continue
            yield GameObject(packet.number, "iceball", name, type_name + " (zlib, does not inflate)", whole,
                             suffix=".zlib")


def rutentoy_objects(packet, _memo):
    images = [s for s in packet.sources if s.name == "Reassembled image"]
    for layer in packet.games:
        if layer.proto != "rutentoy":
            continue
        cookie = None
        for node in layer.item.walk():
            f = node.field
            if f is None:
                continue
            if f.abbrev == "rutentoy.texture.cookie":
                cookie = node.value
            elif f.abbrev == "rutentoy.texture.image.xxh32" and 0 < node.source < len(packet.sources) \
                    and packet.sources[node.source] in images:
                data = packet.sources[node.source].data
                digest, ok = node.value, None
                parent = _parent_image(layer.item, node)
                if parent is not None:
                    ok = child_value(parent, "rutentoy.texture.image.digest_ok")
                yield GameObject(packet.number, "rutentoy", f"texture-{cookie or 0:08x}-{digest}", "QOI image",
                                 data, suffix=".qoi", extra={"xxh32": digest, "digest_ok": ok, "cookie": cookie})


def _parent_image(top, target):
    for node in top.walk():
        if target in (node.children or ()):
            return node
    return None


def freeblox_objects(packet, _memo):
    for layer in packet.games:
        if layer.proto != "freeblox":
            continue
        name = None
        for node in layer.item.walk():
            f = node.field
            if f is None:
                continue
            if f.abbrev == "freeblox.stream_asset.asset_name":
                name = node.value
            elif f.abbrev == "freeblox.stream_asset.buffer" and isinstance(node.value, (bytes, bytearray)):
                fmt = child_value(node, "freeblox.stream_asset.buffer.format") or ""
                ext = EXTENSIONS.get(str(fmt).upper(), "")
                yield GameObject(packet.number, "freeblox", name or "asset", fmt or "data", bytes(node.value),
                                 suffix=ext)


def blank_objects(packet, memo):
    """A chunk is named by the coordinates its Chunk Begin announced (remembered per transmission id)."""
    d = packet.decoded
    conv = tuple(sorted((f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}")))
    for tid, x, y, z in zip(*(packet.values(f"blank.chunk_begin.{f}") for f in (
            "transmission_id", "coords.x", "coords.y", "coords.z"))):
        memo[(conv, tid)] = (x, y, z)
        while len(memo) > 4096:
            del memo[next(iter(memo))]
    raw, inflated = _sources(packet, "Reassembled chunk"), _sources(packet, "Inflated chunk")
    if not raw:
        return
    tid = (packet.values("blank.chunk_data.transmission_id") or [0])[0]
    where = memo.get((conv, tid))
    at = "chunk_" + "_".join(map(str, where)) if where else "chunk"
    name = f"{at}-tid{tid}-frame{packet.number}"
    yield GameObject(packet.number, "blank", name, "zlib chunk", raw[0], suffix=".zlib")
    if inflated:
        yield GameObject(packet.number, "blank", name, "chunk", inflated[0], suffix=".bin")


FINDERS = {"iceball": iceball_objects, "rutentoy": rutentoy_objects, "freeblox": freeblox_objects,
           "blank": blank_objects}


PNG_MISSING = ("the PNG copies of the textures need protodump[images] (Pillow and qoi): only the QOI files were "
               "written")


def png_support() -> bool:
    """Whether textures can be converted to PNG (the optional `qoi` and Pillow packages import)."""
    try:
        import qoi  # noqa: F401
        from PIL import Image  # noqa: F401
    except ImportError:
        return False
    return True


def png_of_qoi(data: bytes) -> bytes | None:
    """A PNG of a QOI image (None when it does not decode or Pillow is missing)."""
    try:
        import io

        import qoi
        from PIL import Image
        pixels = qoi.decode(data)
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, format="PNG")
        return out.getvalue()
    except Exception:  # noqa: BLE001 - a hostile image is not exported as PNG, and that is all
        return None


class ObjectExporter:
    """Feed packets; every object of `proto` is written to `folder` at once (bounded)."""

    def __init__(self, proto: str, folder: str, max_objects: int = MAX_OBJECTS, max_bytes: int = MAX_BYTES):
        if proto not in FINDERS:
            raise ValueError(f"--export-objects: unknown protocol {proto!r} (known: {', '.join(PROTOCOLS)})")
        self.proto, self.find = proto, FINDERS[proto]
        self.memo: dict = {}           # what a finder remembers between packets (blank: chunk coordinates)
        self.folder = SafeFolder(folder)
        self.max_objects, self.max_bytes = max_objects, max_bytes
        self.written: list[dict] = []
        self.notes: list[str] = []
        self.bytes = 0
        self.skipped = 0
        self.png: bool | None = None          # PNG support, checked at the first texture

    def add(self, packet) -> None:
        if not packet.games:
            return
        for obj in self.find(packet, self.memo):
            self.write(obj, obj.data, obj.suffix)
            if obj.proto == "rutentoy":
                if obj.extra.get("digest_ok") is False:
                    self.notes.append(f"frame {obj.frame}: texture {obj.name}: xxHash32 does not match the "
                                      "announced digest")
                if self.png is None:
                    self.png = png_support()
                    if not self.png:
                        self.notes.append(PNG_MISSING)
                png = png_of_qoi(obj.data) if self.png else None
                if png is not None:
                    self.write(obj, png, ".png", "PNG image")

    def write(self, obj: GameObject, data: bytes, suffix: str, content_type: str | None = None) -> None:
        if len(self.written) >= self.max_objects or self.bytes + len(data) > self.max_bytes:
            self.skipped += 1
            if self.skipped == 1:
                self.notes.append(f"frame {obj.frame}: export limit reached ({self.max_objects} objects, "
                                  f"{self.max_bytes} bytes): later objects are not written")
            return
        name = self.folder.write(obj.name, data, suffix)
        self.bytes += len(data)
        self.written.append({"frame": obj.frame, "proto": obj.proto, "wire_name": obj.name, "file": name,
                             "content_type": content_type or obj.content_type, "size": len(data), **obj.extra})

    def finish(self) -> list[str]:
        """Notes for stderr (limits reached, hash mismatches)."""
        if self.skipped:
            self.notes.append(f"{self.skipped} objects not written (export limit)")
        return self.notes
