"""Content-addressed storage of tool results.

Rows up to BLOB_INLINE_MAX bytes keep their bytes in the database; larger ones go to
DATA_DIR/blobs/<aa>/<sha256>, written atomically before the row exists, so a row
never points at a missing or partial file. Identical bytes are stored once. Texts read
lately are kept in memory (a blob never changes).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from observations.gateway.tokens import estimate_tokens
from observations.models import Blob

FIRST_LINE_MAX = 300
RECENT_TEXTS_BUDGET = 32 * 1024 * 1024  # characters of blob text kept in memory (blob_texts)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def blob_path(sha256: str) -> Path:
    return Path(settings.BLOBS_DIR) / sha256[:2] / sha256


def first_line_of(text: str) -> str:
    line = text.split("\n", 1)[0]
    return line[:FIRST_LINE_MAX]


def blob_put(text: str, *, sha256: str | None = None) -> Blob:
    data = text.encode("utf-8", "surrogatepass")
    digest = sha256 or hashlib.sha256(data).hexdigest()
    existing = Blob.objects.filter(sha256=digest).first()
    if existing is not None:
        return existing
    in_file = len(data) > settings.BLOB_INLINE_MAX
    if in_file:
        _write_file(blob_path(digest), data)
    blob = Blob(
        sha256=digest,
        size=len(data),
        token_estimate=estimate_tokens(text),
        first_line=first_line_of(text),
        data=None if in_file else data,
        in_file=in_file,
    )
    try:
        with transaction.atomic():
            blob.save(force_insert=True)
    except IntegrityError:  # another worker stored the same bytes first
        return Blob.objects.get(sha256=digest)
    return blob


def blob_text(blob: Blob) -> str:
    data = blob_path(blob.sha256).read_bytes() if blob.in_file else bytes(blob.data or b"")
    return data.decode("utf-8", "surrogatepass")


def blob_texts(sha256s: set[str]) -> dict[str, str]:
    """The texts of the blobs ``sha256s``, those read lately from memory: a session's
    state is restored with every observation's text on each gateway request, and a
    blob's text never changes (its name is its digest)."""
    texts = _RECENT.get_many(sha256s)
    missing = sha256s - texts.keys()
    if missing:
        read = {blob.sha256: blob_text(blob) for blob in Blob.objects.filter(sha256__in=missing)}
        _RECENT.put_many(read)
        texts.update(read)
    return texts


class _RecentTexts:
    """Blob texts by digest, the least recently used dropped past ``budget`` characters."""

    def __init__(self, budget: int) -> None:
        self.budget, self.size = budget, 0
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()  # the gateway's requests restore states in several threads

    def get_many(self, digests: set[str]) -> dict[str, str]:
        with self._lock:
            found = {d: self._texts[d] for d in digests if d in self._texts}
            for digest in found:
                self._texts.move_to_end(digest)
            return found

    def put_many(self, texts: dict[str, str]) -> None:
        with self._lock:
            for digest, text in texts.items():
                if digest not in self._texts and len(text) <= self.budget:
                    self._texts[digest] = text
                    self.size += len(text)
            while self.size > self.budget:
                self.size -= len(self._texts.popitem(last=False)[1])


_RECENT = _RecentTexts(RECENT_TEXTS_BUDGET)


def _write_file(path: Path, data: bytes) -> None:
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
