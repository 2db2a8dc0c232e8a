"""Issue 30, point 5: `manage.py start` printed 4,419 lines in 33 minutes (beat's sweep
every 3 s), the demo password on line 257 under the children's start-up banners, and
each refused request with two tracebacks. Here the newcomer's hub (SQLite, embedded
Redis, the demo) is started as the README says: the address and the demo's
credentials come once /healthz is green, after everything else the start printed; a
signed-in person's missing page is one line with no traceback; a quiet half minute adds
almost nothing."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT, _free_port

QUIET_SECONDS = 30  # ten of the sweep's rounds
# What a newcomer's shell does not set (the test run sets a key and hosts of its own).
NEWCOMER_ENV_DROPPED = {"DATABASE_URL", "REDIS_URL", "CELERY_QUEUE", "CHANNELS_PREFIX", "DEBUG", "SECRET_KEY",
                        "SECRET_KEY_FILE", "ALLOWED_HOSTS"}


def wait_for(predicate, timeout: float, what: str, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text(errors='replace')[-4000:]}")


def sign_in(base: str, username: str, password: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    browser.open(f"{base}/login/", timeout=30).read()
    token = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token})
    browser.open(urllib.request.Request(f"{base}/login/", data=form.encode(), headers={"Referer": f"{base}/login/"}),
                 timeout=30).read()
    return browser


def test_a_newcomers_start_says_where_and_who_last_and_then_stays_quiet(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in NEWCOMER_ENV_DROPPED}
    env.update(ATRIUM_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="hub.settings")
    log = tmp_path / "start.log"
    with log.open("wb") as out:
        hub = subprocess.Popen([sys.executable, "manage.py", "start", "--port", str(port)], cwd=PROJECT_ROOT,
                               env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        text = lambda: log.read_text(errors="replace")  # noqa: E731
        match = wait_for(lambda: re.search(r"log in as\s+demo / (\S+)", text()), 180, "the demo's credentials", log)
        at_banner = text()
        banner_at = at_banner.index("Atrium is running at")
        assert banner_at < match.start()
        # Nothing the start printed before the hub answered comes after the banner.
        for earlier in ("migrations applied", "celery@", "Listening on TCP address"):
            assert 0 <= at_banner.find(earlier) < banner_at, earlier
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/healthz", timeout=30) as response:
            assert response.status == 200  # green before the banner was printed

        browser = sign_in(base, "demo", match.group(1))
        with pytest.raises(urllib.error.HTTPError) as missing:
            browser.open(f"{base}/rooms/no-such-room/", timeout=30)
        assert missing.value.code == 404
        # DEBUG is off unless asked: the hub's own page, even for its own machine.
        page = missing.value.read().decode()
        assert 'id="error-page"' in page and "URLconf" not in page
        # Every process of it signed in and spoke through the channel layer with the key it
        # generated (the sign-in above and /healthz's round trip).
        assert len((tmp_path / "data" / "secret_key").read_text()) >= 50
        lines_before_quiet = len(text().splitlines())
        time.sleep(QUIET_SECONDS)
        output = text()
        assert output.count("Not Found: /rooms/no-such-room/") == 1, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
        added = output.splitlines()[lines_before_quiet:]
        assert len(added) <= 5, "\n".join(added)  # the sweep every few seconds logs nothing
    finally:
        os.killpg(hub.pid, signal.SIGINT)
        try:
            hub.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(hub.pid, signal.SIGKILL)
            hub.wait()
