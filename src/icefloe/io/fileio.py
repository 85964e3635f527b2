"""FileIO: read, write, list and delete files by location, backed by ``pyarrow.fs``.

Locations are URIs (``file:///x``, ``s3://bucket/key``) or plain absolute paths (``/x``).
``file:/x``, ``file:///x``, ``file://localhost/x`` and ``/x`` all name the same local file;
``s3``, ``s3a`` and ``s3n`` all name the same object store.

Local writes are crash-safe: a new file is written under a temporary name in the target
directory, flushed to disk, then published with ``os.link`` (which fails if the target exists,
so creating a file is exclusive) or ``os.replace`` when overwriting. A crash never leaves a
half-written file under the final name. Inside a commit's durability barrier
(``io.durability``) a fresh-named file skips its own fsync: the barrier fsyncs all of the commit's
files together before the catalog pointer moves, so until then a machine crash may leave such a
file incomplete, but unreferenced. Object-store writes become visible only when the upload
completes; inside a barrier a small fresh-named object is uploaded in the background once its
writer closes, and the barrier waits for the upload before the pointer moves (``io.uploads``).

Exclusive creation on object stores. pyarrow's S3 client cannot send a conditional write
(``If-None-Match: *``), so ``create(overwrite=False)`` there checks existence first with one HEAD
request (a race with another writer is still possible). Files whose name the caller has just made
from a fresh UUID (data files, manifests, roots, metadata files: everything a commit writes) cannot
collide with anything, so the check buys nothing: ``new_output(location, fresh_name=True)`` skips it,
as Iceberg Java does for its UUID-named metadata files. Locally such files are still created
exclusively (that costs no request). What must be exclusive under a reused name (the Hadoop
catalog's ``vN.metadata.json``) is written only to local file systems, where it is atomic.

Reads on object stores. pyarrow's S3 client asks for an object's size (a HEAD) before its first
GET, and its Python binding opens files by path only (``open_input_file`` and
``open_input_stream`` alike; the C++ overloads that take a known size are not exposed). So reading
a whole small object here (a metadata file, a manifest list or manifest, a v4 root or leaf, a
Puffin file) costs a HEAD and a GET. The one exception is Parquet: a dataset fragment takes the
size, and data and delete files, whose manifest entries record theirs, are opened that way
(``formats.parquet.opening``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import posixpath
import threading
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from icefloe.errors import AlreadyExists, NotFound, Unsupported, UnsupportedLocation, ValidationError
from icefloe.io.durability import DurabilityBarrier, current_barrier
from icefloe.io.uploads import DeferredUploadWriter, wait_for_upload
from icefloe.io.writers import PublishingWriter

S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_REGION = "s3.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"
S3_CONNECT_TIMEOUT = "s3.connect-timeout"
S3_REQUEST_TIMEOUT = "s3.request-timeout"
S3_RETRY_NUM_RETRIES = "s3.retry.num-retries"
DEFAULT_S3_RETRIES = 5
"""Retries of a throttled or failed S3 request (Iceberg Java's S3FileIO default), with backoff."""

_LOCAL_SCHEMES = ("", "file")
_S3_SCHEMES = ("s3", "s3a", "s3n")


# ---------------------------------------------------------------------------------------------
# location helpers


def split_scheme(location: str) -> tuple[str, str]:
    """(lower-case scheme, rest) of a location; a plain path has scheme ``""``."""
    head, sep, rest = location.partition(":")
    if sep and head and "/" not in head and len(head) > 1 and head.replace("+", "").isalnum():
        return head.lower(), rest
    return "", location


def local_path(location: str) -> str | None:
    """The local file-system path a location names, or None when it is not a local location."""
    scheme, rest = split_scheme(location)
    if scheme not in _LOCAL_SCHEMES:
        return None
    if scheme == "file" and rest.startswith("//"):
        authority, _, path = rest[2:].partition("/")
        if authority not in ("", "localhost"):
            raise UnsupportedLocation(
                f"file location with a remote host is not supported: {location}", location=location
            )
        rest = "/" + path
    path = os.path.abspath(rest) if rest else os.getcwd()
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return path


def normalize_location(location: str) -> str:
    """Canonical spelling of a location, for comparing paths written by different engines.

    Local files become ``file:///abs/path`` (``file:/x``, ``file:///x`` and ``/x`` are equal);
    ``s3a://`` and ``s3n://`` become ``s3://``; trailing slashes are dropped.
    """
    path = local_path(location)
    if path is not None:
        return "file://" + path
    scheme, rest = split_scheme(location)
    if scheme in _S3_SCHEMES:
        scheme = "s3"
    if rest.strip("/"):
        rest = rest.rstrip("/")
    return f"{scheme}:{rest}"


def _respell(base: str, base_path: str, found: str) -> str:
    """Spell ``found`` (a file-system path under ``base_path``) in the style of location ``base``."""
    if found == base_path:
        return base
    suffix = found[len(base_path) :].lstrip("/")
    return base.rstrip("/") + "/" + suffix


# ---------------------------------------------------------------------------------------------
# input and output files


class InputFile:
    """A readable file at a location."""

    def __init__(self, io: FileIO, location: str) -> None:
        self._io = io
        self.location = location

    def _fs(self) -> tuple[pafs.FileSystem, str]:
        return self._io.filesystem_and_path(self.location)

    @property
    def length(self) -> int:
        """Size of the file in bytes; NotFound when it does not exist."""
        fs, path = self._fs()
        info = fs.get_file_info(path)
        if info.type != pafs.FileType.File:
            raise NotFound(f"file does not exist: {self.location}")
        return int(info.size or 0)

    def __len__(self) -> int:
        return self.length

    def exists(self) -> bool:
        """True when a file exists at the location."""
        return self._io.exists(self.location)

    def open(self) -> pa.NativeFile:
        """A seekable binary stream over the file (use it as a context manager)."""
        fs, path = self._fs()
        try:
            return fs.open_input_file(path)
        except FileNotFoundError:
            raise NotFound(f"file does not exist: {self.location}") from None
        except OSError as exc:
            if _is_missing(exc):
                raise NotFound(f"file does not exist: {self.location}") from None
            raise

    def read(self) -> bytes:
        """The whole file as bytes."""
        with self.open() as stream:
            return bytes(stream.read())

    def __repr__(self) -> str:
        return f"InputFile({self.location!r})"


class OutputFile:
    """A file to be written at a location.

    ``fresh_name``: the caller made the name just now from a new UUID, so no other writer can be
    creating it; object stores then skip the existence check of ``create(overwrite=False)``.
    """

    def __init__(self, io: FileIO, location: str, fresh_name: bool = False) -> None:
        self._io = io
        self.location = location
        self.fresh_name = fresh_name

    def exists(self) -> bool:
        """True when a file exists at the location already."""
        return self._io.exists(self.location)

    def to_input_file(self) -> InputFile:
        """The same location as an input file."""
        return InputFile(self._io, self.location)

    def create(self, overwrite: bool = False) -> io.RawIOBase:
        """A writable binary stream; the file appears only when the stream is closed without error.

        Raises AlreadyExists when the file exists and ``overwrite`` is False (for local files the
        check is atomic; an object store checks with one request, unless the name is fresh). Leaving
        a ``with`` block by an exception discards the partial file.
        """
        path = local_path(self.location)
        if path is not None:
            barrier = current_barrier() if self.fresh_name else None
            return _AtomicLocalWriter(path, self.location, overwrite, barrier)
        fs, fs_path = self._io.filesystem_and_path(self.location)
        is_object_store = isinstance(fs, pafs.S3FileSystem)
        check = not overwrite and not (is_object_store and self.fresh_name)
        if check and (_object_exists(fs, fs_path) if is_object_store else self.exists()):
            raise AlreadyExists(f"file already exists: {self.location}")
        parent = posixpath.dirname(fs_path)
        if parent and not is_object_store:
            # An object store has no directories: a key is created with its object, and a
            # directory marker would cost a request per write.
            with contextlib.suppress(OSError):
                fs.create_dir(parent, recursive=True)

        def stream() -> _RemoteWriter:
            return _RemoteWriter(fs.open_output_stream(fs_path), fs, fs_path)

        barrier = current_barrier() if is_object_store and self.fresh_name else None
        if barrier is not None:
            return DeferredUploadWriter(fs, fs_path, self.location, barrier, stream)
        return stream()

    def write_bytes(self, data: bytes, overwrite: bool = False) -> None:
        """Write the whole file at once (same existence rules as ``create``)."""
        with self.create(overwrite=overwrite) as stream:
            stream.write(data)

    def __repr__(self) -> str:
        return f"OutputFile({self.location!r})"


class _AtomicLocalWriter(PublishingWriter):
    """Writes to a temporary file next to the target and publishes it atomically on close.

    A fresh name (made from a new UUID) written inside a durability barrier is written in place
    instead, created exclusively: no other writer can be creating it and nothing refers to it
    until the commit that names it, so the temporary file, its hard link and its unlink (~0.25 ms
    a file) buy nothing there. An error or an unclosed stream still deletes it.
    """

    def __init__(
        self, path: str, location: str, overwrite: bool, barrier: DurabilityBarrier | None = None
    ) -> None:
        super().__init__()
        self._path = path
        self._location = location
        self._overwrite = overwrite
        self._barrier = barrier
        self._written = 0
        self._tmp: str | None = None
        if barrier is not None and not overwrite:
            try:
                self._file = _create_exclusive(path)
            except FileExistsError:
                raise AlreadyExists(f"file already exists: {location}") from None
        else:
            if not overwrite and os.path.lexists(path):
                raise AlreadyExists(f"file already exists: {location}")
            directory, name = os.path.split(path)
            self._tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
            self._file = _create_exclusive(self._tmp)
        self._done = False  # set only once there is a file: __del__ of a failed __init__ deletes nothing

    def write(self, data: Any) -> int:
        n = self._file.write(data)
        self._written += n
        return n

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()

    def abort(self) -> None:
        """Discard everything written; the target file is not created (or is deleted again)."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path if self._tmp is None else self._tmp)
        super().close()

    def close(self) -> None:
        if self._done:
            return
        try:
            self._file.flush()
            if self._barrier is None:
                os.fsync(self._file.fileno())
            self._file.close()
            if self._tmp is not None:
                self._publish(self._tmp)
        except BaseException:
            self.abort()
            raise
        if self._barrier is not None:
            self._barrier.defer(self._path)  # made durable with the rest of the commit
        self._done = True
        super().close()

    def _publish(self, tmp: str) -> None:
        if self._overwrite:
            os.replace(tmp, self._path)
        else:
            try:
                os.link(tmp, self._path)
            except FileExistsError:
                raise AlreadyExists(f"file already exists: {self._location}") from None
            except OSError:
                # No hard links here (some network/FUSE file systems): reserve the name
                # exclusively, then move the complete file over the reservation.
                try:
                    fd = os.open(self._path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                except FileExistsError:
                    raise AlreadyExists(f"file already exists: {self._location}") from None
                os.close(fd)
                os.replace(tmp, self._path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if self._barrier is None:
            _fsync_dir(os.path.dirname(self._path))


def _create_exclusive(path: str) -> io.BufferedWriter:
    """Open a new file for writing (FileExistsError if it exists), making its directory if needed."""
    try:
        return open(path, "xb")
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return open(path, "xb")


class _RemoteWriter(PublishingWriter):
    """Wraps a pyarrow output stream; an exception inside ``with`` deletes the partial object."""

    def __init__(self, stream: pa.NativeFile, fs: pafs.FileSystem, path: str) -> None:
        super().__init__()
        self._stream = stream
        self._fs = fs
        self._path = path
        self._done = False

    def write(self, data: Any) -> int:
        self._stream.write(data)
        return len(memoryview(data))

    def tell(self) -> int:
        return int(self._stream.tell())

    def flush(self) -> None:
        if not self._stream.closed:
            self._stream.flush()

    def abort(self) -> None:
        """Close and remove whatever was uploaded."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(Exception):
            self._stream.close()
        with contextlib.suppress(Exception):
            self._fs.delete_file(self._path)
        super().close()

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        self._stream.close()
        super().close()


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _object_exists(fs: pafs.FileSystem, path: str) -> bool:
    """True when an object exists at ``path``: one HEAD request (``get_file_info`` adds a LIST)."""
    try:
        with fs.open_input_file(path):
            return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        if _is_missing(exc):
            return False
        raise


def _is_missing(exc: OSError) -> bool:
    text = str(exc).lower()
    return "not found" in text or "no such file" in text or "does not exist" in text


# ---------------------------------------------------------------------------------------------
# FileIO


DELETE_WORKERS = 8
"""Deletes in flight at once (object stores answer one request at a time per connection)."""
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ListedFile:
    """A file found by ``FileIO.list_files``: location, size, modification time (None if unknown)."""

    location: str
    size: int
    modified_ms: int | None


def _mtime_ms(info: pafs.FileInfo) -> int | None:
    mtime = info.mtime_ns
    return None if mtime is None else mtime // 1_000_000


class FileIO:
    """Files by location; chooses a pyarrow file system by URI scheme (local or S3)."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties: dict[str, str] = dict(properties or {})
        self._filesystems: dict[str, pafs.FileSystem] = {}
        self._lock = threading.Lock()

    def new_input(self, location: str) -> InputFile:
        """A readable file at ``location``."""
        return InputFile(self, location)

    def new_output(self, location: str, fresh_name: bool = False) -> OutputFile:
        """A file to be written at ``location`` (``fresh_name``: made from a new UUID, see OutputFile)."""
        return OutputFile(self, location, fresh_name)

    def exists(self, location: str) -> bool:
        """True when a file exists at ``location``."""
        fs, path = self.filesystem_and_path(location)
        if isinstance(fs, pafs.S3FileSystem):
            return _object_exists(fs, path)
        return bool(fs.get_file_info(path).type == pafs.FileType.File)

    def delete(self, location: str, missing_ok: bool = False) -> None:
        """Delete the file at ``location``; NotFound when it does not exist unless ``missing_ok``."""
        path = local_path(location)
        if path is not None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                if not missing_ok:
                    raise NotFound(f"file does not exist: {location}") from None
            return
        fs, fs_path = self.filesystem_and_path(location)
        if isinstance(fs, pafs.S3FileSystem):
            if not missing_ok and not _object_exists(fs, fs_path):
                raise NotFound(f"file does not exist: {location}")
            # DeleteObject of a missing key succeeds; pyarrow's delete_file would HEAD and LIST first.
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(fs_path)
            return
        if fs.get_file_info(fs_path).type != pafs.FileType.File:
            if missing_ok:
                return
            raise NotFound(f"file does not exist: {location}")
        fs.delete_file(fs_path)

    def delete_many(self, locations: Iterable[str], workers: int = DELETE_WORKERS) -> list[str]:
        """Delete files on a thread pool (a missing one counts as deleted); returns those that failed.

        Best effort: a failure is logged and the rest go on (an undeleted file is only an orphan).
        """
        paths = list(dict.fromkeys(locations))

        def delete(path: str) -> str | None:
            try:
                self.delete(path, missing_ok=True)
            except Exception as exc:
                logger.warning("could not delete %s: %s", path, exc)
                return path
            return None

        if not paths:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths)))) as pool:
            return [p for p in pool.map(delete, paths) if p is not None]

    def list_prefix(self, prefix: str) -> list[str]:
        """Locations of every file under the directory ``prefix`` (recursive), spelled like ``prefix``.

        A missing directory lists as empty. Temporary files of in-flight local writes are skipped.
        """
        return [f.location for f in self.list_files(prefix)]

    def list_files(self, prefix: str) -> list[ListedFile]:
        """``list_prefix`` with each file's size and modification time, sorted by location."""
        fs, base = self.filesystem_and_path(prefix)
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            return [ListedFile(prefix, info.size or 0, _mtime_ms(info))]
        if info.type != pafs.FileType.Directory:
            return []
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        out = []
        for entry in fs.get_file_info(selector):
            if entry.type != pafs.FileType.File:
                continue
            name = posixpath.basename(entry.path)
            if name.startswith(".") and name.endswith(".tmp"):
                continue
            out.append(ListedFile(_respell(prefix, base, entry.path), entry.size or 0, _mtime_ms(entry)))
        return sorted(out, key=lambda f: f.location)

    def filesystem_and_path(self, location: str) -> tuple[pafs.FileSystem, str]:
        """The pyarrow file system and the path within it, for pyarrow readers and writers.

        An object this process is still uploading in the background (``io.uploads``) is waited for
        first, so whatever the caller does next (read, check, delete) meets the finished upload.
        """
        path = local_path(location)
        if path is not None:
            return self._filesystem("file"), path
        scheme, rest = split_scheme(location)
        if scheme in _S3_SCHEMES:
            if not rest.startswith("//"):
                raise UnsupportedLocation(
                    f"malformed S3 location (expected s3://bucket/key): {location}", location=location
                )
            wait_for_upload(rest[2:])
            return self._filesystem("s3"), rest[2:]
        parts = urlsplit(location)
        return self._filesystem(scheme, location), parts.netloc + parts.path

    def _filesystem(self, scheme: str, location: str | None = None) -> pafs.FileSystem:
        with self._lock:
            fs = self._filesystems.get(scheme)
            if fs is None:
                fs = self._make_filesystem(scheme, location)
                self._filesystems[scheme] = fs
            return fs

    def _make_filesystem(self, scheme: str, location: str | None) -> pafs.FileSystem:
        if scheme == "file":
            return pafs.LocalFileSystem()
        if scheme == "s3":
            return pafs.S3FileSystem(**s3_options(self.properties))
        try:
            fs, _ = pafs.FileSystem.from_uri(location or f"{scheme}://")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
            raise Unsupported(f"no file system for scheme {scheme!r}: {exc}") from exc
        return fs

    def __repr__(self) -> str:
        return f"FileIO(schemes={sorted(self._filesystems)})"


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "yes")


def s3_options(properties: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for ``pyarrow.fs.S3FileSystem`` from Iceberg ``s3.*`` properties."""
    opts: dict[str, Any] = {}
    if endpoint := properties.get(S3_ENDPOINT):
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        opts["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
        opts["scheme"] = parts.scheme
    if key := properties.get(S3_ACCESS_KEY_ID):
        opts["access_key"] = key
    if secret := properties.get(S3_SECRET_ACCESS_KEY):
        opts["secret_key"] = secret
    if token := properties.get(S3_SESSION_TOKEN):
        opts["session_token"] = token
    if region := properties.get(S3_REGION):
        opts["region"] = region
    if S3_PATH_STYLE_ACCESS in properties:
        opts["force_virtual_addressing"] = not _truthy(properties[S3_PATH_STYLE_ACCESS])
    retries = int(properties.get(S3_RETRY_NUM_RETRIES, DEFAULT_S3_RETRIES))
    if retries < 0:
        raise ValidationError(f"{S3_RETRY_NUM_RETRIES} must be >= 0, got {retries}")
    # The AWS SDK's standard strategy: throttling answers (503 SlowDown) and transient errors are
    # retried with exponential backoff and jitter.
    opts["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=retries + 1)
    # Small files become one PutObject instead of a three-request multipart upload.
    opts["allow_delayed_open"] = True
    for prop, arg in ((S3_CONNECT_TIMEOUT, "connect_timeout"), (S3_REQUEST_TIMEOUT, "request_timeout")):
        if prop in properties:
            opts[arg] = float(properties[prop])
    return opts


def load_file_io(properties: Mapping[str, str] | None = None, location: str | None = None) -> FileIO:
    """A FileIO configured from catalog/table properties.

    ``location`` (a warehouse or table location) is only a hint: one FileIO serves every scheme,
    creating each file system lazily on first use.
    """
    del location
    return FileIO(properties)
