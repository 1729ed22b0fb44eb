"""Files a run is made of, written and read one way: atomically (all or nothing), opened safely, parsed fast.

Reading opens only a regular file, never through a symlink, and never more than a size cap: a results
folder may come from anyone, and a link to /dev/zero or a FIFO must be an error, not a hang or a crash.
Writing puts a folder only where a name's :func:`slug` says, under the results directory.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path

from ..errors import UsageError

#: The most a stored file may hold before it is read: more is damage, not a run (samples of a day at 4 Hz
#: are some 30 MB).
MAX_BYTES = 256 * 2**20

_UNSAFE = re.compile(r"[^A-Za-z0-9._+@=,-]+")


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


def read_bytes(path: str | Path, *, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``; OSError for a symlink, a device, a FIFO or more than ``limit``.

    O_NOFOLLOW refuses a link as the last component; O_NONBLOCK lets a FIFO open without a writer, and then
    fstat refuses it. The cap is checked before reading and while reading (a file may grow).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = {"p": "a FIFO", "c": "a character device", "b": "a block device", "d": "a directory",
                    "s": "a socket"}.get(stat.filemode(info.st_mode)[0], "not a file")
            raise OSError(f"it is {kind}, not a regular file")
        if info.st_size > limit:
            raise OSError(f"{info.st_size} bytes, more than the {limit} a stored file may hold")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, max(info.st_size + 1 - size, 1 << 16))
            if not chunk:
                return b"".join(chunks) if len(chunks) != 1 else chunks[0]
            size += len(chunk)
            if size > limit:
                raise OSError(f"more than the {limit} bytes a stored file may hold")
            chunks.append(chunk)
    finally:
        os.close(fd)


def parse_json(path: str | Path, *, limit: int = MAX_BYTES):
    """The JSON document at ``path`` (read by :func:`read_bytes`): through orjson where installed, else json.

    Raises OSError (unreadable, not a regular file, too big) or ValueError (not JSON, nested too deep)."""
    # orjson, where installed, parses twice as fast; it refuses what json.dumps can write and it cannot
    # (NaN, integers beyond 64 bits), and then json reads the file as it always did.
    data = read_bytes(path, limit=limit)
    try:
        import orjson
    except ImportError:
        return _json(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _json(data)


def _json(data: bytes):
    try:
        return json.loads(data)
    except RecursionError:  # json recurses once per nesting level: a hostile file nests 100,000 deep
        raise ValueError("nested too deep to be a benchlab file") from None


def why(exc: BaseException) -> str:
    """An error of :func:`parse_json` as a few words: a link and a missing file said plainly."""
    import errno

    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return "it is a symbolic link, and benchlab reads only regular files inside a run's folder"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def slug(name, *, limit: int = 120) -> str:
    """``name`` as a safe folder name: letters, digits and ``. _ + @ = , -`` kept, any other run of characters
    one ``_``, no leading dot, never empty, ``.`` or ``..``; a name longer than ``limit`` keeps its start and
    ends with a digest of the whole, so two long names stay two folders.

    >>> slug("spring-tomcat+vt@java25"), slug("/../../x"), slug("sleep:40"), slug("")
    ('spring-tomcat+vt@java25', '_.._.._x', 'sleep_40', '_')
    """
    text = _UNSAFE.sub("_", str(name))
    if len(text) > limit:
        import hashlib

        text = text[:limit - 11] + "-" + hashlib.sha256(str(name).encode("utf-8", "replace")).hexdigest()[:10]
    if text.startswith("."):
        text = "_" + text[1:]
    return text or "_"


def under(root: str | Path, name: str) -> Path:
    """``root / slug(name)``, checked to lie inside ``root`` once both are resolved; UsageError otherwise."""
    from ..errors import UsageError

    root = Path(root)
    path = root / slug(name)
    base = root.resolve()
    if path.resolve().parent != base:
        raise UsageError(f"{name!r} would put a run at {path.resolve()}, outside results_dir {base}: "
                         "give a plain name")
    return path


def results_home(results_dir) -> Path:
    """The results directory, checked before anything is written: a directory, or one that can be made."""
    from .. import home

    path = Path(results_dir) if results_dir is not None else home.results_dir()
    if path.exists() and not path.is_dir():
        raise UsageError(f"results_dir {path} is a file: give a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"results_dir {path} is under the file {existing}: give a directory")
    try:  # os.access says yes to root on a read-only file system: try it
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise UsageError(f"results_dir {path} cannot be written: a new file in {existing} fails ({exc.strerror}): "
                         "give a directory you can write") from None
    return path
