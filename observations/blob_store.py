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

import functools
import os
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class BlobStore(Protocol):
    def put(self, sha256: str, data: bytes) -> None: ...

    def get(self, sha256: str) -> bytes: ...


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
        return self.path(sha256).read_bytes()


class S3Store:
    def __init__(self, bucket: str, prefix: str, endpoint_url: str | None) -> None:
        import boto3  # only a hub that stores blobs there pays for importing it

        self.bucket, self.prefix = bucket, prefix
        # A client is safe to share between threads (the gateway's requests run in several).
        self.client = boto3.client("s3", endpoint_url=endpoint_url or None)

    def key(self, sha256: str) -> str:
        return f"{self.prefix}{sha256[:2]}/{sha256}"

    def put(self, sha256: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.key(sha256), Body=data)

    def get(self, sha256: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self.key(sha256))["Body"].read()


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


@functools.cache
def _store(value: str, blobs_dir: str, endpoint_url: str) -> BlobStore | None:
    kind, bucket, prefix = parse_blob_store(value)
    if kind == "database":
        return None
    if kind == "s3":
        return S3Store(bucket, prefix, endpoint_url)
    return FileStore(Path(blobs_dir))


def blob_store() -> BlobStore | None:
    """The configured store for large blobs; None: every blob stays in its row."""
    return _store(settings.BLOB_STORE, str(settings.BLOBS_DIR), settings.S3_ENDPOINT_URL)
