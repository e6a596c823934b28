"""Writing a file atomically: a reader sees the old file or the new one, never half of one.

Idea: every file mxnb saves (``mx.nd.save``, MXNet ``.params`` checkpoints,
optimizer ``.states``) is written to a temporary file in the target's
directory, flushed, fsynced, then renamed over the target (atomic on POSIX
and Windows).  A process killed mid-save leaves the old file intact.

Rule: the temporary file is ``.<name>.mxnb-save-<pid>-<random>.partial``, so
debris is obviously debris; the next save of the same target removes debris
whose writer is dead (a live writer's file is kept).  The new file gets the
mode ``open()`` would give (0644 under umask 022), not ``mkstemp``'s 0600.

State kept: none.

Example::

    >>> import os, pathlib, tempfile
    >>> from mxnb.atomic_file import write_atomically
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.bin')
    >>> write_atomically(path, b'abc')
    >>> pathlib.Path(path).read_bytes(), oct(os.stat(path).st_mode & 0o777) in ('0o644', '0o664', '0o600')
    (b'abc', True)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

__all__ = ["PARTIAL_SUFFIX", "write_atomically"]

PARTIAL_SUFFIX = ".partial"


def write_atomically(path: str | os.PathLike, chunks: bytes | Iterable[bytes]) -> None:
    """Write ``chunks`` (bytes, or an iterable of bytes) to ``path`` atomically; see the module docstring."""
    path = os.fspath(path)
    remove_stale_partials(path)
    directory, base = os.path.split(os.path.abspath(path))
    handle, temp_path = tempfile.mkstemp(
        prefix=f".{base}.mxnb-save-{os.getpid()}-", suffix=PARTIAL_SUFFIX, dir=directory
    )
    try:
        os.fchmod(handle, 0o666 & ~current_umask())  # as open() would: 0644 under umask 022
        with os.fdopen(handle, "wb") as stream:
            for chunk in [chunks] if isinstance(chunks, (bytes, bytearray, memoryview)) else chunks:
                stream.write(chunk)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp_path, path)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise


def current_umask() -> int:
    """The process's umask (reading it means setting it; it is put back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_stale_partials(path: str) -> None:
    """Delete temporary files that an earlier, killed save of ``path`` left behind.

    Files of a live process (a save still running, maybe in another process)
    are kept.
    """
    directory, base = os.path.split(os.path.abspath(path))
    prefix = f".{base}.mxnb-save-"
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(PARTIAL_SUFFIX)):
            continue
        pid_text = name[len(prefix) :].split("-", 1)[0]
        if not pid_text.isdigit() or _process_alive(int(pid_text)):
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists but belongs to someone else
    return True
