"""Where a blob too large for its row is kept (``ATRIUM_BLOB_STORE``):

- ``files`` (the default): ``DATA_DIR/blobs/<aa>/<sha256>``, written atomically. One
  machine's folder: hosts that share it share a volume.
- ``database``: in the row whatever its size, so every host that reaches the database
  reads it, with nothing else to run.
- ``s3://<bucket>[/<prefix>]``: an S3-compatible object store through boto3 (AWS's, or
  another's at ``ATRIUM_S3_ENDPOINT_URL``; credentials and region as boto3 finds them,
  e.g. ``AWS_ACCESS_KEY_ID``). An object is written whole or not at all.

Whichever it is, a blob is stored before its row exists, so a row never names bytes
that are not there; a blob's name is its digest, so writing it twice is harmless. The
store holds the blobs written while it was configured: changing it leaves earlier large
blobs where they were (copy them over first).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class BlobStore(Protocol):
    def put(self, sha256: str, data: bytes) -> None: ...

    def get(self, sha256: str) -> bytes:
        """The bytes named ``sha256``; BlobMissing if the store has none, or others."""
        ...


class BlobMissing(LookupError):
    """The store has no bytes of that name, or bytes that are not of that digest."""


def checked(sha256: str, data: bytes, where: str) -> bytes:
    """``data``, if it is what ``sha256`` names: what reaches an agent's context is what
    was stored."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise BlobMissing(f"blob {sha256} in {where} does not hold the bytes of its name")
    return data


class FileStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def put(self, sha256: str, data: bytes) -> None:
        path = self.path(sha256)
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, sha256: str) -> bytes:
        try:
            return checked(sha256, self.path(sha256).read_bytes(), str(self.root))
        except FileNotFoundError:
            raise BlobMissing(f"blob {sha256} is not in {self.root} (was ATRIUM_BLOB_STORE changed?)") from None


class S3Store:
    def __init__(self, bucket: str, prefix: str, endpoint_url: str | None) -> None:
        # Only a hub that stores blobs there pays for importing boto3.
        import boto3.session
        from botocore.config import Config
        from botocore.exceptions import ClientError

        self._client_error = ClientError
        self.bucket, self.prefix = bucket, prefix
        # A client of a session of its own (boto3's default session is not safe to build
        # clients from in several threads), shared by the threads (a client is). A unit's
        # blobs are stored inside its transaction: a store that does not answer fails it
        # in seconds, not minutes.
        self.client = boto3.session.Session().client("s3", endpoint_url=endpoint_url or None, config=Config(
            connect_timeout=5, read_timeout=30, retries={"mode": "standard", "max_attempts": 3}))

    def key(self, sha256: str) -> str:
        return f"{self.prefix}{sha256[:2]}/{sha256}"

    def put(self, sha256: str, data: bytes) -> None:
        try:
            # Only if absent: the bytes another process stored under that name are these.
            self.client.put_object(Bucket=self.bucket, Key=self.key(sha256), Body=data, IfNoneMatch="*")
        except self._client_error as exc:
            if exc.response.get("Error", {}).get("Code") != "PreconditionFailed":
                raise

    def get(self, sha256: str) -> bytes:
        where = f"s3://{self.bucket}/{self.prefix}"
        try:
            data = self.client.get_object(Bucket=self.bucket, Key=self.key(sha256))["Body"].read()
        except self._client_error as exc:
            if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                raise
            raise BlobMissing(f"blob {sha256} is not in {where} (was ATRIUM_BLOB_STORE changed?)") from None
        return checked(sha256, data, where)


def parse_blob_store(value: str) -> tuple[str, str, str]:
    """``ATRIUM_BLOB_STORE`` as (kind, bucket, prefix); ImproperlyConfigured for anything
    else, said at start-up rather than at the first large tool result."""
    value = value.strip() or "files"
    if value in ("files", "database"):
        return value, "", ""
    parts = urlsplit(value)
    if parts.scheme == "s3" and parts.netloc and not parts.query and not parts.fragment:
        prefix = parts.path.strip("/")
        return "s3", parts.netloc, f"{prefix}/" if prefix else ""
    raise ImproperlyConfigured(f"ATRIUM_BLOB_STORE={value!r}: use files, database or s3://<bucket>[/<prefix>].")


_stores: dict[tuple[str, str, str], BlobStore | None] = {}
_making = threading.Lock()


def blob_store() -> BlobStore | None:
    """The configured store for large blobs; None: every blob stays in its row. One per
    setting, made once also when threads ask at once."""
    setting = (settings.BLOB_STORE, str(settings.BLOBS_DIR), settings.S3_ENDPOINT_URL)
    with _making:
        if setting not in _stores:
            _stores[setting] = _made(*setting)
        return _stores[setting]


def _made(value: str, blobs_dir: str, endpoint_url: str) -> BlobStore | None:
    kind, bucket, prefix = parse_blob_store(value)
    if kind == "database":
        return None
    if kind == "s3":
        return S3Store(bucket, prefix, endpoint_url)
    return FileStore(Path(blobs_dir))
