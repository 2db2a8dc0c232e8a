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
from collections.abc import Iterable, Mapping
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


def blobs_put(texts: Mapping[str, str]) -> None:
    """Store the texts ``texts`` (by their digests) in one statement, those already stored
    left as they are: a unit's results, payloads and requests at once, where one
    ``blob_put`` each would cost a lookup and an insert apiece. A text this process saw
    committed (read or written) is not sent again; one written here is kept in memory
    once its transaction commits (the next restore of the session reads it)."""
    texts = {digest: text for digest, text in texts.items() if not _RECENT.stored(digest)}
    if not texts:
        return
    rows = []
    for digest, text in texts.items():
        data = text.encode("utf-8", "surrogatepass")
        in_file = len(data) > settings.BLOB_INLINE_MAX
        if in_file:
            _write_file(blob_path(digest), data)
        rows.append(Blob(sha256=digest, size=len(data), token_estimate=estimate_tokens(text),
                         first_line=first_line_of(text), data=None if in_file else data, in_file=in_file))
    Blob.objects.bulk_create(rows, ignore_conflicts=True)
    transaction.on_commit(lambda: _RECENT.put_many(texts, stored=True))


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
        # Stored for good only once the transaction that read them commits: a rolled back
        # one may have read rows it wrote itself.
        transaction.on_commit(lambda: _RECENT.mark_stored(read))
        texts.update(read)
    return texts


class _RecentTexts:
    """Blob texts by digest, the least recently used dropped past ``budget`` characters,
    and which of them are known to be in the store (committed)."""

    def __init__(self, budget: int) -> None:
        self.budget, self.size = budget, 0
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._stored: set[str] = set()
        self._lock = threading.Lock()  # the gateway's requests restore states in several threads

    def stored(self, digest: str) -> bool:
        with self._lock:
            return digest in self._stored

    def get_many(self, digests: set[str]) -> dict[str, str]:
        with self._lock:
            found = {d: self._texts[d] for d in digests if d in self._texts}
            for digest in found:
                self._texts.move_to_end(digest)
            return found

    def put_many(self, texts: dict[str, str], *, stored: bool = False) -> None:
        with self._lock:
            for digest, text in texts.items():
                if digest not in self._texts and len(text) <= self.budget:
                    self._texts[digest] = text
                    self.size += len(text)
            if stored:
                self._stored.update(d for d in texts if d in self._texts)
            while self.size > self.budget:
                digest, text = self._texts.popitem(last=False)
                self.size -= len(text)
                self._stored.discard(digest)

    def mark_stored(self, digests: Iterable[str]) -> None:
        with self._lock:
            self._stored.update(d for d in digests if d in self._texts)

    def clear(self) -> None:
        with self._lock:
            self._texts.clear()
            self._stored.clear()
            self.size = 0


_RECENT = _RecentTexts(RECENT_TEXTS_BUDGET)


def blob_texts_forget() -> None:
    """Read every blob from the store again (the tests' database is emptied between them)."""
    _RECENT.clear()


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
