from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from hub.git import git
from rooms.models import Membership, Room

pytestmark = pytest.mark.django_db(transaction=True)


def seed(*args: str) -> str:
    out = io.StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str:
    match = re.search(r"log in as\s+demo / (\S+)", output)
    assert match, output
    return match.group(1)


def test_seed_demo_creates_a_user_who_can_log_in_and_a_demo_room():
    output = seed()
    password = printed_password(output)
    assert "http://127.0.0.1:8000/" in output
    user = authenticate(username="demo", password=password)
    assert user is not None and user.is_staff
    room = Room.objects.get(owner=user, name="Demo")
    assert Membership.objects.get(room=room, user=user).role == "owner"
    assert room.check_command == "python -m pytest -q"
    assert f"/rooms/{room.slug}/" in output
    files = git("ls-files", cwd=room.repo_path).split()
    assert files == ["README.md", "test_textstats.py", "textstats.py"]


def test_the_demo_repository_has_a_real_failing_test(tmp_path):
    seed()
    room = Room.objects.get(name="Demo")
    checkout = tmp_path / "checkout"
    shutil.copytree(room.repo_path, checkout)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=checkout, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 4 passed" in result.stdout


def test_seed_demo_again_keeps_the_room_and_resets_the_password():
    first = printed_password(seed())
    room = Room.objects.get(name="Demo")
    second_output = seed("--url", "http://example.test:9000/")
    second = printed_password(second_output)
    assert first != second
    assert authenticate(username="demo", password=first) is None
    assert authenticate(username="demo", password=second) is not None
    assert list(Room.objects.filter(name="Demo").values_list("pk", flat=True)) == [room.pk]
    assert Path(room.repo_path).is_dir()
    assert "http://example.test:9000/" in second_output
