"""Writing a file atomically: a reader sees the old file or the new one, never half of one.

Idea: every file mxnb saves (``mx.nd.save``, MXNet ``.params`` checkpoints,
optimizer ``.states``, symbol JSON, Chrome traces, RecordIO ``.rec`` / ``.idx``
and image ``.lst`` files) is written to a temporary file in the target's
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
from typing import Any

__all__ = ["PARTIAL_SUFFIX", "AtomicFile", "write_atomically", "write_text_atomically"]

PARTIAL_SUFFIX = ".partial"


def write_atomically(path: str | os.PathLike, chunks: bytes | Iterable[bytes]) -> None:
    """Write ``chunks`` (bytes, or an iterable of bytes) to ``path`` atomically; see the module docstring."""
    with AtomicFile(path) as stream:
        for chunk in [chunks] if isinstance(chunks, (bytes, bytearray, memoryview)) else chunks:
            stream.write(chunk)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically: symbol JSON, traces, image lists."""
    write_atomically(path, text.encode("utf-8"))


class AtomicFile:
    """A file written in pieces that appears at ``path`` whole, at :meth:`commit`, or never.

    For writers that keep a file open across calls (RecordIO's ``.rec`` and
    ``.idx``): bytes go to the partial file; :meth:`commit` flushes, fsyncs
    and renames it over ``path``; :meth:`discard` (or an exception inside a
    ``with`` block) removes it and leaves the old ``path`` as it was.
    """

    def __init__(self, path: str | os.PathLike, text: bool = False) -> None:
        self.path = os.fspath(path)
        remove_stale_partials(self.path)
        directory, base = os.path.split(os.path.abspath(self.path))
        handle, self.temp_path = tempfile.mkstemp(
            prefix=f".{base}.mxnb-save-{os.getpid()}-", suffix=PARTIAL_SUFFIX, dir=directory
        )
        try:
            os.fchmod(handle, 0o666 & ~current_umask())  # as open() would: 0644 under umask 022
            if text:
                self.stream = os.fdopen(handle, "w", encoding="utf-8")
            else:
                self.stream = os.fdopen(handle, "wb")
        except BaseException:
            os.close(handle)
            self._remove_partial()
            raise
        self.closed = False

    def write(self, data: Any) -> int:
        """Append ``data`` to the partial file."""
        return self.stream.write(data)

    def tell(self) -> int:
        """Bytes (or characters) written so far."""
        return self.stream.tell()

    def flush(self) -> None:
        """Flush Python's buffer (the file stays partial until :meth:`commit`)."""
        self.stream.flush()

    def commit(self) -> None:
        """Make the written bytes the file at ``path`` (atomically); closes."""
        if self.closed:
            return
        self.closed = True
        try:
            self.stream.flush()
            os.fsync(self.stream.fileno())
            self.stream.close()
            os.replace(self.temp_path, self.path)
        except BaseException:
            self.stream.close()
            self._remove_partial()
            raise

    def discard(self) -> None:
        """Forget what was written; ``path`` keeps its old content; closes."""
        if self.closed:
            return
        self.closed = True
        self.stream.close()
        self._remove_partial()

    close = commit

    def _remove_partial(self) -> None:
        try:
            os.unlink(self.temp_path)
        except OSError:
            pass

    def __enter__(self) -> AtomicFile:  # noqa: PYI034 - not subclassed
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


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
