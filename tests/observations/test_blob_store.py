"""Large blobs where every host reaches them: in the database's rows, or in an
S3-compatible object store through boto3 (moto's S3 server on this machine, spoken to
over HTTP by the real SDK), instead of a folder only one host sees."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import boto3
import pytest
from django.core.exceptions import ImproperlyConfigured
from moto.server import ThreadedMotoServer

from observations.blob_store import BlobMissing, parse_blob_store
from observations.blobs import (
    blob_put,
    blob_text,
    blob_texts,
    blob_texts_forget,
    blobs_put,
    sha256_text,
)
from observations.models import Blob
from tests.conftest import hub_process_env

BUCKET = "atrium-blobs"
LARGE = "def f(x):\n    return x * 2\n" * 200  # past the inline limit these tests set


@pytest.fixture
def s3(monkeypatch, settings, tmp_path) -> Iterator[boto3.client]:
    """An S3 server with the hub's bucket, the hub's blob store set to it, and no folder
    of blobs this host could fall back on."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # moto's buckets live in the process, from one server to the next: each test starts empty.
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST"))
    for name, value in {"AWS_ACCESS_KEY_ID": "atrium", "AWS_SECRET_ACCESS_KEY": "atrium-secret",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=f"http://{host}:{port}")
    client.create_bucket(Bucket=BUCKET)
    settings.BLOB_STORE, settings.S3_ENDPOINT_URL = f"s3://{BUCKET}/hub-1", f"http://{host}:{port}"
    settings.BLOB_INLINE_MAX, settings.BLOBS_DIR = 1_000, tmp_path / "no-blobs-here"
    try:
        yield client
    finally:
        server.stop()


def _stored(client, digest: str) -> bytes:
    return client.get_object(Bucket=BUCKET, Key=f"hub-1/{digest[:2]}/{digest}")["Body"].read()


@pytest.mark.django_db
def test_a_large_blob_goes_to_the_object_store_and_reads_back(s3, settings):
    blob = blob_put(LARGE)
    assert blob.in_file and blob.data is None
    assert _stored(s3, blob.sha256) == LARGE.encode()
    blob_texts_forget()
    assert blob_text(Blob.objects.get(pk=blob.pk)) == LARGE
    assert not settings.BLOBS_DIR.exists()


@pytest.mark.django_db
def test_a_units_blobs_go_to_the_object_store_in_one_go_and_small_ones_stay_in_their_rows(s3):
    texts = {sha256_text(text): text for text in (LARGE, LARGE + "# two\n", "small\n")}
    blobs_put(texts)
    rows = {blob.sha256: blob for blob in Blob.objects.all()}
    assert {d for d, row in rows.items() if row.in_file} == {sha256_text(LARGE), sha256_text(LARGE + "# two\n")}
    assert bytes(rows[sha256_text("small\n")].data) == b"small\n"
    assert _stored(s3, sha256_text(LARGE + "# two\n")) == (LARGE + "# two\n").encode()
    blob_texts_forget()
    assert blob_texts(set(texts)) == texts


@pytest.mark.django_db
def test_bytes_are_stored_only_where_none_are_and_bytes_not_of_their_name_are_refused(s3):
    digest = sha256_text(LARGE)
    s3.put_object(Bucket=BUCKET, Key=f"hub-1/{digest[:2]}/{digest}", Body=b"something else")
    blob_put(LARGE)  # another process stored it first (here: not these bytes): kept as it is
    assert _stored(s3, digest) == b"something else"
    blob_texts_forget()
    with pytest.raises(BlobMissing, match="does not hold the bytes of its name"):
        blob_text(Blob.objects.get(pk=digest))


@pytest.mark.django_db
def test_a_blob_the_store_does_not_have_is_said_so(s3, settings, tmp_path):
    settings.BLOB_STORE, settings.BLOBS_DIR = "files", tmp_path / "blobs"
    digest = blob_put(LARGE).sha256  # a file of this host's
    settings.BLOB_STORE = "s3://atrium-blobs/hub-1"
    blob_texts_forget()
    with pytest.raises(BlobMissing, match="is not in s3://atrium-blobs/hub-1/"):
        blob_text(Blob.objects.get(pk=digest))
    settings.BLOB_STORE, settings.BLOBS_DIR = "files", tmp_path / "other"
    with pytest.raises(BlobMissing, match="was ATRIUM_BLOB_STORE changed"):
        blob_text(Blob.objects.get(pk=digest))


@pytest.mark.django_db
def test_a_missing_bucket_fails_the_write_and_leaves_no_row(s3):
    s3.delete_bucket(Bucket=BUCKET)
    with pytest.raises(Exception, match="NoSuchBucket"):
        blob_put(LARGE)
    assert not Blob.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_another_host_with_a_data_folder_of_its_own_reads_the_blob(s3, settings, tmp_path):
    blob = blob_put(LARGE)
    read = subprocess.run(
        [sys.executable, "-c", "import sys, django; django.setup(); from observations.blobs import blob_text; "
         "from observations.models import Blob; sys.stdout.write(blob_text(Blob.objects.get(pk=sys.argv[1])))",
         blob.sha256],
        env=hub_process_env(ATRIUM_DATA_DIR=str(tmp_path / "another-host"), ATRIUM_BLOB_STORE=settings.BLOB_STORE,
                            ATRIUM_S3_ENDPOINT_URL=settings.S3_ENDPOINT_URL, ATRIUM_BLOB_INLINE_MAX="1000"),
        capture_output=True, text=True, timeout=120)
    assert read.returncode == 0, read.stderr
    assert read.stdout == LARGE


@pytest.mark.django_db
def test_in_the_database_a_large_blob_stays_in_its_row(settings, tmp_path):
    settings.BLOB_STORE, settings.BLOB_INLINE_MAX, settings.BLOBS_DIR = "database", 1_000, tmp_path / "blobs"
    blob = blob_put(LARGE)
    assert not blob.in_file and bytes(blob.data) == LARGE.encode()
    blob_texts_forget()
    assert blob_text(Blob.objects.get(pk=blob.pk)) == LARGE
    assert not settings.BLOBS_DIR.exists()


@pytest.mark.parametrize(("value", "parsed"), [
    ("", ("files", "", "")),
    ("files", ("files", "", "")),
    ("database", ("database", "", "")),
    ("s3://bucket", ("s3", "bucket", "")),
    ("s3://bucket/some/prefix/", ("s3", "bucket", "some/prefix/")),
])
def test_the_store_setting_is_read(value, parsed):
    assert parse_blob_store(value) == parsed


@pytest.mark.parametrize("value", ["s3://", "s3:///prefix", "disk", "ftp://bucket", "s3://bucket?x=1"])
def test_a_store_setting_that_names_no_store_is_refused(value):
    with pytest.raises(ImproperlyConfigured, match="ATRIUM_BLOB_STORE"):
        parse_blob_store(value)
