"""Files a run is made of, written and read one way: atomically (all or nothing), parsed fast."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def _read_umask() -> int:
    """This process's umask, read without changing it where the kernel says it (Linux 4.7+)."""
    # os.umask can only be read by setting it; between the two calls another thread's new file would get
    # the wrong mode, so it is read from /proc where possible, and otherwise once, at import.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: The mode a new file gets, as open() would give it: mkstemp's own is 0600, whatever the umask.
FILE_MODE = 0o666 & ~_read_umask()


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: readers see all or nothing.

    The file gets the mode the umask gives any new file, and the folder is synced after the rename, so
    the new name survives a crash too, not only the bytes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # a folder that cannot be opened for reading (some network file systems): the rename stands
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse to sync a directory; the rename itself is done
    finally:
        os.close(fd)


def parse_json(path: str | Path) -> dict:
    """The JSON document at ``path``: through orjson where installed, else json."""
    # orjson, where installed, parses twice as fast; it refuses what json.dumps can write and it cannot
    # (NaN, integers beyond 64 bits), and then json reads the file as it always did.
    with open(path, "rb") as file:  # a plain open: pathlib's own costs were a tenth of reading 10,000 runs
        data = file.read()
    try:
        import orjson
    except ImportError:
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
