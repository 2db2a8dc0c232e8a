"""Content-addressed storage of tool results.

Rows up to BLOB_INLINE_MAX bytes keep their bytes in the database; larger ones go to
the blob store (``observations.blob_store``: files, the database itself, or an S3
store), written before the row exists, so a row never points at missing or partial
bytes. Identical bytes are stored once. Texts read lately are kept in memory (a blob
never changes).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from django.conf import settings
from django.db import IntegrityError, transaction

from observations.blob_store import BlobMissing, BlobStore, blob_store
from observations.gateway.tokens import estimate_tokens
from observations.models import Blob

FIRST_LINE_MAX = 300
RECENT_TEXTS_BUDGET = 32 * 1024 * 1024  # characters of blob text kept in memory (blob_texts)
READ_SLICE = 10_000  # blobs read in one statement


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def first_line_of(text: str) -> str:
    line = text.split("\n", 1)[0]
    return line[:FIRST_LINE_MAX]


def blob_put(text: str, *, sha256: str | None = None) -> Blob:
    data = text.encode("utf-8", "surrogatepass")
    digest = sha256 or hashlib.sha256(data).hexdigest()
    existing = Blob.objects.filter(sha256=digest).first()
    if existing is not None:
        return existing
    in_file = _stored_apart(blob_store(), digest, data)
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
    rows, store = [], blob_store()
    for digest, text in texts.items():
        data = text.encode("utf-8", "surrogatepass")
        in_file = _stored_apart(store, digest, data)
        rows.append(Blob(sha256=digest, size=len(data), token_estimate=estimate_tokens(text),
                         first_line=first_line_of(text), data=None if in_file else data, in_file=in_file))
    Blob.objects.bulk_create(rows, ignore_conflicts=True)
    transaction.on_commit(lambda: _RECENT.put_many(texts, stored=True))


def _stored_apart(store: BlobStore | None, digest: str, data: bytes) -> bool:
    """Put ``data`` in ``store`` if it is too large for its row (and the store is not the
    database); whether it went there."""
    if store is None or len(data) <= settings.BLOB_INLINE_MAX:
        return False
    store.put(digest, data)
    return True


def blob_text(blob: Blob) -> str:
    """The text of ``blob``: ``in_file`` says it is in the blob store, not its row."""
    if blob.in_file:
        store = blob_store()
        if store is None:
            raise BlobMissing(f"blob {blob.sha256} is kept outside the database, and ATRIUM_BLOB_STORE is database")
        data = store.get(blob.sha256)
    else:
        data = bytes(blob.data or b"")
    return data.decode("utf-8", "surrogatepass")


def blob_texts(sha256s: set[str]) -> dict[str, str]:
    """The texts of the blobs ``sha256s``, those read lately from memory: a session's
    state is restored with every observation's text on each gateway request, and a
    blob's text never changes (its name is its digest)."""
    texts = _RECENT.get_many(sha256s)
    missing = sha256s - texts.keys()
    if missing:
        wanted = sorted(missing)
        # In slices: a statement binds at most 65,535 values on the server.
        read = {blob.sha256: blob_text(blob) for start in range(0, len(wanted), READ_SLICE)
                for blob in Blob.objects.filter(sha256__in=wanted[start:start + READ_SLICE])}
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
