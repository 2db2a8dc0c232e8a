"""The push rules on ref names, in plain Python: what no content can make acceptable."""

from __future__ import annotations

import pytest

from rooms.repository.pushes import ZERO_OID, RefUpdate, name_refusal

A, B = "a" * 40, "b" * 40


@pytest.mark.parametrize(("line", "says"), [
    (f"{A} {B} refs/heads/main", None),
    (f"{ZERO_OID} {B} refs/heads/feature/x", None),
    (f"{A} {ZERO_OID} refs/heads/feature/x", None),
    (f"{A} {B} refs/heads/feature", None),
    (f"{ZERO_OID} {B} refs/tags/v1", None),
    (f"{A} {ZERO_OID} refs/heads/main", "main cannot be deleted"),
    (f"{A} {B} refs/heads/atrium/session-3", "read-only for people"),
    (f"{ZERO_OID} {B} refs/heads/atrium/anything", "read-only for people"),
    (f"{ZERO_OID} {B} refs/heads/atrium", "read-only for people"),
    (f"{ZERO_OID} {B} refs/tags/atrium/session-3", "read-only for people"),
    (f"{ZERO_OID} {B} refs/heads/HEAD", "read-only for people"),
    (f"{ZERO_OID} {B} refs/tags/main", "a branch has that name"),
    (f"{ZERO_OID} {B} refs/tags/feature", "a branch has that name"),
    (f"{ZERO_OID} {B} refs/heads/v1", "a tag has that name"),
    (f"{A} {ZERO_OID} refs/tags/v1", None),
    (f"{ZERO_OID} {B} refs/heads/", "only branches and tags"),
    (f"{ZERO_OID} {B} refs/notes/commits", "only branches and tags"),
    (f"{ZERO_OID} {B} refs/remotes/origin/main", "only branches and tags"),
    (f"{ZERO_OID} {B} HEAD", "only branches and tags"),
])
def test_which_refs_a_person_may_change(line, says):
    refusal = name_refusal(RefUpdate.parse(line), main="main", branches={"main", "feature"}, tags={"v1"})
    assert refusal == says if says is None else says in refusal

