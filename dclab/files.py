"""Files dclab reads and writes, safely: inputs must be regular files below a size limit
(a device, a FIFO or a huge file is refused before it is read), outputs are written beside
their destination and moved in only over a regular file or nothing (a device, FIFO,
symlink or directory there is refused, and a failure removes only what this call made),
names that become file names or shell words follow one grammar, and text echoed in a
message is cut. One place, read by every level."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tomllib
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Scenario, campaign, reference and workload files are a few kB; the largest bandwidth
# traces in ../shared/traces are a few MB. A limit far above both, far below memory.
from .errors import InputError

INPUT_LIMIT = 64 * 1024 * 1024
ECHO_LIMIT = 120

# A JSON or TOML object at an edge: as a file, a program's output line or a log gives it,
# or as it is about to be written. Inside dclab a record with a shape is a model; this is
# what it is built from or dumped to.
JsonObject = dict[str, Any]

# Campaign, sweep and experiment names: they become directory names, file names and words
# in the shell scripts `campaign sbatch` writes, so nothing that needs quoting in any.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NAME_RULE = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit"


class FileRefused(InputError):
    """A path dclab will not read or write, with the reason in words."""


def clip(text: object, limit: int = ECHO_LIMIT) -> str:
    """`text` as repr, cut to about `limit` characters: messages never echo a whole input."""
    s = repr(text)
    return s if len(s) <= limit else f"{s[:limit]}... ({len(str(text))} characters)"


# Characters shown as escapes when text read from a file reaches a terminal: controls (an
# escape sequence could redraw earlier lines), format characters (U+202E reverses what
# follows), surrogates, private use, line and paragraph separators.
_UNPRINTED = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}


def printable(text: str, limit: int = 500) -> str:
    """`text` safe to print: each control or format character shown as its escape (\\x1b,
    \\u202e), cut to about `limit` characters."""
    out = "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) in _UNPRINTED else c
                  for c in text[: limit + 1])
    return out if len(text) <= limit else f"{out[:limit]}... ({len(text)} characters)"


def check_name(name: str, what: str) -> str:
    """`name` if it follows NAME_RE, else FileRefused naming `what` and the rule."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise FileRefused(f"{what}: {clip(name)} is not a valid name ({NAME_RULE})")
    return name


def slug(text: str, limit: int = 80) -> str:
    """A file-name word for any string read back from a store (experiment, sweep, run key):
    every character outside A-Z a-z 0-9 _ . - becomes '_', a leading dot too, cut to
    `limit`. Never empty, never '.' or '..', never a path."""
    s = re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:limit]
    if s.startswith("."):
        s = "_" + s[1:]
    return s or "_"


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _open_input(path: Path, what: str, limit: int) -> int:
    """A descriptor of the regular file at `path` of at most `limit` bytes, opened without
    blocking (a FIFO is refused, not waited on); FileRefused naming `what` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise FileRefused(f"{what}: cannot read {path}: {e.strerror or e}") from None
    st = os.fstat(fd)
    problem = (f"is {kind_of(st.st_mode)}, not a regular file" if not stat.S_ISREG(st.st_mode)
               else f"is {st.st_size} bytes; at most {limit} are read" if st.st_size > limit else None)
    if problem:
        os.close(fd)
        raise FileRefused(f"{what}: {path} {problem}")
    return fd


def check_input(path: str | os.PathLike[str], what: str, limit: int = INPUT_LIMIT) -> Path:
    """`path` if it is a regular file (symlinks to one are followed) of at most `limit`
    bytes, for readers that open it themselves; else FileRefused, without blocking on a
    FIFO."""
    os.close(_open_input(Path(path), what, limit))
    return Path(path)


def read_input(path: str | os.PathLike[str], what: str, limit: int = INPUT_LIMIT) -> str:
    """The UTF-8 text of the regular file at `path` (symlinks to one are followed). A
    FIFO is opened without blocking and refused; a device, a directory or a file over
    `limit` bytes is refused before anything is read. FileRefused names `what`."""
    p = Path(path)
    fd = _open_input(p, what, limit)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while we read it
        raise FileRefused(f"{what}: {p} is over {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileRefused(f"{what}: {p} is not UTF-8 text (byte {e.start})") from None


def read_toml(path: str | os.PathLike[str], what: str, limit: int = INPUT_LIMIT) -> JsonObject:
    """The TOML file at `path` read through read_input; a syntax error or nesting too deep
    for the parser is FileRefused naming `what`, the file and the place."""
    text = read_input(path, what, limit).removeprefix("\ufeff")  # a byte order mark some editors write
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FileRefused(f"{what}: {path} is not valid TOML: {e}") from None
    except RecursionError:
        raise FileRefused(f"{what}: {path}: arrays or tables nested too deeply") from None


# What Linux takes: a path of at most PATH_MAX - 1 bytes, each name at most NAME_MAX.
PATH_MAX, NAME_MAX = 4096, 255


def _sized(path: str | os.PathLike[str], what: str) -> Path:
    """`path`, refused before it is echoed or used if the system cannot take it (a path of
    thousands of characters would otherwise fill the message that refuses it)."""
    p = Path(path)
    n = len(os.fsencode(p))
    longest = max((len(os.fsencode(part)) for part in p.parts), default=0)
    if n >= PATH_MAX or longest > NAME_MAX:
        raise FileRefused(f"{what}: {clip(str(p), 60)}: a path of {n} bytes with a name of {longest}; the system "
                          f"takes at most {PATH_MAX - 1} and {NAME_MAX}")
    return p


def check_output(path: str | os.PathLike[str], what: str) -> Path:
    """`path` if dclab may write a file there: nothing there yet, or a regular file (not a
    symlink), in a directory that exists. Else FileRefused naming `what`."""
    p = _sized(path, what)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise FileRefused(f"{what}: cannot use {p}: {e.strerror or e}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{what}: {p} is {kind_of(st.st_mode)}; dclab writes only over a regular file or nothing")
    parent = p.parent
    if not parent.is_dir():
        raise FileRefused(f"{what}: the directory {parent} does not exist" if not parent.exists()
                          else f"{what}: {parent} is not a directory")
    return p


def check_output_dir(path: str | os.PathLike[str], what: str) -> Path:
    """`path` if dclab may create files in it: a directory (not a symlink to one) or nothing
    yet, under a directory that exists or can be made. Else FileRefused naming `what`."""
    p = _sized(path, what)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as e:
        raise FileRefused(f"{what}: cannot use {p}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise FileRefused(f"{what}: {p} is {kind_of(st.st_mode)}, not a directory")
    return p


@contextlib.contextmanager
def output_file(path: str | os.PathLike[str], what: str, mode: int = 0o644) -> Iterator[Path]:
    """Yields a temporary path beside `path` to write to; when the block ends without an
    exception, moves it over `path` (checked again just before: only a regular file or
    nothing is replaced). On any failure only the temporary file is removed: a file that
    was at `path` before is left as it was."""
    dest = check_output(path, what)
    fd = -1
    tmp = dest
    for n in range(100):
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{n}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
            break
        except FileExistsError:
            continue
        except OSError as e:
            raise FileRefused(f"{what}: cannot write in {dest.parent}: {e.strerror or e}") from None
    if fd < 0:
        raise FileRefused(f"{what}: cannot make a temporary file beside {dest}")
    os.close(fd)
    try:
        yield tmp
        check_output(dest, what)
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_output(path: str | os.PathLike[str], data: str | bytes, what: str, mode: int = 0o644) -> Path:
    """Writes `data` whole to `path` through output_file (fsync before the move)."""
    with output_file(path, what, mode) as tmp:
        with open(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
    return Path(path)


def secure_dir(path: str | os.PathLike[str], what: str) -> Path:
    """The directory `path`, made 0700 if missing; FileRefused unless it is a directory
    (not a symlink) owned by this user and writable by no one else. For the state a root
    tool acts on (journals name processes to stop and directories to remove)."""
    p = Path(path)
    try:
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(p)
    except OSError as e:
        raise FileRefused(f"{what}: cannot make {p}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise FileRefused(f"{what}: {p} is {kind_of(st.st_mode)}, not a directory")
    if st.st_uid != os.geteuid():
        raise FileRefused(f"{what}: {p} is owned by uid {st.st_uid}, not by this user ({os.geteuid()}); "
                          "remove it or set DCLAB_STATE_DIR")
    if st.st_mode & 0o022:
        raise FileRefused(f"{what}: {p} is writable by others (mode {stat.S_IMODE(st.st_mode):o}); "
                          "anyone could plant a journal there: chmod 700 it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(p, 0o700)
    return p


def read_owned_json(path: str | os.PathLike[str], limit: int = 1024 * 1024) -> Any:
    """The JSON in `path` if it is a regular file owned by this user and writable by no one
    else; FileRefused otherwise (a file another user could have written is never acted on)."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except OSError as e:
        raise FileRefused(f"{p}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{p} is {kind_of(st.st_mode)}, not a regular file")
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise FileRefused(f"{p} is owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):o}: "
                          "not written by this user alone, ignored")
    try:
        return json.loads(read_input(p, "state file", limit))
    except json.JSONDecodeError as e:
        raise FileRefused(f"{p} is not JSON: {e}") from None
