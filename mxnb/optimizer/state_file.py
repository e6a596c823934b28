"""Optimizer state files: a pickle-free ``.npz`` archive, read as hostile input.

Idea: MXNet pickles its optimizer states (``Updater.get_states``), so loading
a ``.states`` file from someone else can run their code.  mxnb writes a numpy
``.npz`` archive instead (a ZIP of ``.npy`` files, stored uncompressed): one
``__layout__`` entry holding UTF-8 JSON that describes the states, and one
array per state NDArray, named by the layout::

    {"states": [[["int", 0], {"array": "a0", "ctx": "cpu(0)"}],          # key 0: one array
                [["str", "w"], {"seq": [{"array": "a1"}, null], "tuple": true}]],
     "optimizer": null | {"type": "sgd", "num_update": 3, "counts": [[["int", 0], 3]]}}

Rule: every entry must be stored (never deflated) and every ``.npy`` header's
shape must take exactly the bytes the entry holds, both checked BEFORE any
array is allocated, so what a file loads as never outweighs the file (no zip
bomb, no header claiming terabytes); object arrays are refused (nothing is
unpickled); each array is used once; every malformed part raises
:class:`~mxnb.base.FormatError` naming the file and the field
(``states[1][1].seq[0].array``).

State kept: none.

Example::

    >>> import numpy as np
    >>> from mxnb.optimizer import state_file
    >>> blob = state_file.dumps({'states': [], 'optimizer': None}, {'a0': np.ones(2)})
    >>> layout, arrays = state_file.loads(blob, 'x.states')
    >>> layout, arrays['a0'].tolist()
    ({'states': [], 'optimizer': None}, [1.0, 1.0])
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from typing import Any

import numpy as np

from ..base import FormatError

__all__ = ["check_key", "dumps", "loads"]

LAYOUT = "__layout__"


def dumps(layout: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    """The archive holding ``layout`` (JSON) and ``arrays`` (by name), uncompressed."""
    entries = dict(arrays)
    entries[LAYOUT] = np.frombuffer(json.dumps(layout).encode("utf-8"), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **entries)
    return buffer.getvalue()


def _bad(source: str, message: str) -> FormatError:
    return FormatError(
        f"optimizer states {source!r}: {message}; the file is corrupt or not written by "
        "mxnb's save_optimizer_states (MXNet's pickled .states files are not read)"
    )


def _read_npy(source: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One ``.npy`` entry, its header checked against the entry's size before allocating."""
    what = f"entry {info.filename!r}"
    with archive.open(info) as stream:
        try:
            version = np.lib.format.read_magic(stream)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(stream)
        except (ValueError, TypeError, SyntaxError, OverflowError) as exc:
            raise _bad(source, f"{what} has no valid .npy header ({exc})") from None
        if dtype.hasobject:
            raise _bad(source, f"{what} holds Python objects (dtype {dtype}), never unpickled")
        data_size = info.file_size - stream.tell()
        if math.prod(shape) * dtype.itemsize != data_size:
            raise _bad(
                source,
                f"{what}: shape {shape} of {dtype} does not take the {data_size} bytes it holds",
            )
        raw = stream.read()
    order = "F" if fortran_order else "C"
    return np.frombuffer(raw, dtype=dtype).reshape(shape, order=order).copy()


def loads(data: bytes, source: str = "<bytes>") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(layout, arrays)`` of an archive written by :func:`dumps`; ``source`` names it in errors."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise _bad(source, f"it is not an .npz archive ({exc})") from None
    arrays: dict[str, np.ndarray] = {}
    with archive:
        for info in infos:
            name = info.filename.removesuffix(".npy")
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                raise _bad(source, f"entry {info.filename!r} is compressed (mxnb stores entries)")
            if not info.filename.endswith(".npy") or name in arrays:
                raise _bad(source, f"entry {info.filename!r} is not a new '<name>.npy'")
            try:
                arrays[name] = _read_npy(source, archive, info)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                if isinstance(exc, FormatError):
                    raise
                raise _bad(source, f"entry {info.filename!r} cannot be read ({exc})") from None
    layout_array = arrays.pop(LAYOUT, None)
    if layout_array is None or layout_array.dtype != np.uint8 or layout_array.ndim != 1:
        raise _bad(source, f"entry {LAYOUT!r} (a 1-d uint8 array of JSON) is missing")
    try:
        layout = json.loads(layout_array.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise _bad(source, f"field {LAYOUT!r} is not JSON ({reason})") from None
    _check_layout(source, layout, arrays)
    return layout, arrays


def check_key(source: str, item: Any, where: str) -> Any:
    """The parameter key that ``["int", 3]`` / ``["str", "w"]`` stands for."""
    if isinstance(item, list) and len(item) == 2:
        kind, value = item
        if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind == "str" and isinstance(value, str):
            return value
    raise _bad(source, f"field {where} is {item!r}, not a key ['int', 3] or ['str', 'name']")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_layout(source: str, layout: Any, arrays: dict[str, np.ndarray]) -> None:
    """Check the layout field by field; every array named once and present."""
    if not isinstance(layout, dict) or not isinstance(layout.get("states"), list):
        raise _bad(source, "field 'states' is missing or not a list")
    used: set[str] = set()
    for index, pair in enumerate(layout["states"]):
        if not isinstance(pair, list) or len(pair) != 2:
            raise _bad(source, f"field states[{index}] is not a [key, state] pair")
        check_key(source, pair[0], f"states[{index}][0]")
        _check_state(source, pair[1], f"states[{index}][1]", arrays, used)
    dumped = layout.get("optimizer")
    if dumped is None:
        return
    if not isinstance(dumped, dict) or not _is_count(dumped.get("num_update")):
        raise _bad(source, "field 'optimizer' is not {'num_update': int >= 0, 'counts': [...]}")
    counts = dumped.get("counts")
    if not isinstance(counts, list):
        raise _bad(source, "field optimizer.counts is not a list of [key, count] pairs")
    for index, pair in enumerate(counts):
        where = f"optimizer.counts[{index}]"
        if not isinstance(pair, list) or len(pair) != 2 or not _is_count(pair[1]):
            raise _bad(source, f"field {where} is not a [key, count >= 0] pair")
        check_key(source, pair[0], f"{where}[0]")


def _check_state(
    source: str, item: Any, where: str, arrays: dict[str, np.ndarray], used: set[str]
) -> None:
    if item is None:
        return
    if isinstance(item, dict) and isinstance(item.get("seq"), list):
        if not isinstance(item.get("tuple"), bool):
            raise _bad(source, f"field {where}.tuple is not true or false")
        for index, sub in enumerate(item["seq"]):
            _check_state(source, sub, f"{where}.seq[{index}]", arrays, used)
        return
    name = item.get("array") if isinstance(item, dict) else None
    if not isinstance(name, str) or name not in arrays:
        raise _bad(source, f"field {where} is {item!r}: not null, a seq, or an array of the file")
    if name in used:
        raise _bad(source, f"field {where}.array: array {name!r} is used twice")
    used.add(name)
