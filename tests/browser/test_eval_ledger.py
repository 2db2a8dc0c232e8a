"""The eval ledger in a real browser: a scripted scenario run through a real worker
shows on the global page and its room's page, and a run's page lists its checks with
their evidence; a failed check's evidence names the request."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect, sync_playwright

from evals.models import EvalBatch, EvalRun
from tests.browser.test_room_chat import CHROMIUM, CHROMIUM_ARGS, PASSWORD, log_in
from tests.rooms.factories import make_user

SCENARIO = Path(__file__).resolve().parents[2] / "evals" / "scenarios" / "constraint-vendor.yaml"


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_the_eval_ledger_lists_runs_and_shows_a_runs_checks_with_evidence(daphne_server, celery_worker):
    ada = make_user("ada", password=PASSWORD)
    make_user("eve", password=PASSWORD)
    call_command("eval", str(SCENARIO), "--no-worker", "--as", "ada", "--label", "browser")
    run = EvalRun.objects.get()
    assert run.state == "passed" and run.resets >= 3
    room_slug = run.room.slug
    # A failed run of another batch, as a broken gateway leaves it (constructed).
    failed_batch = EvalBatch.objects.create(model="script", scripted=True, created_by=ada)
    failed = EvalRun.objects.create(
        batch=failed_batch, scenario="constraint-vendor", scenario_version=run.scenario_version,
        scenario_kind=run.scenario_kind, model="script", room=run.room, state="failed", resets=3, resets_asked=3,
        request_passed=0, request_total=1,
        checks=[{"family": "request", "kind": "in_force", "label": "in_force: Never edit anything under vendor/",
                 "passed": False, "judged": 20, "evidence": [
                     "request #9 (step 9, turn 4, segment 2): 'Never edit anything under vendor/' missing from the "
                     "handoff's decisions in force"]}])

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser, daphne_server.url, "ada")
            page.click("nav >> text=Evals")
            expect(page.get_by_role("heading", name="Eval ledger")).to_be_visible()
            row = page.locator(f"#eval-run-{run.pk}")
            expect(row).to_contain_text("constraint-vendor")
            expect(row).to_contain_text("passed")
            expect(row).to_contain_text("3 of 3 asked")
            expect(page.locator(f"#eval-run-{failed.pk}")).to_contain_text("failed")

            row.get_by_role("link", name="constraint-vendor", exact=True).click()
            expect(page.locator("#eval-run-state")).to_have_text("passed")
            expect(page.locator("#request-checks li[data-passed=true]")).to_have_count(2)
            expect(page.locator("#request-checks")).to_contain_text("in_force: Never edit anything under vendor/")
            expect(page.locator("#behaviour-checks")).to_contain_text("untouched: vendor/**")
            expect(page.locator("#request-checks .check-note")).to_have_text(
                "the hub's ledger answers: NOTES.md, src/count.py, src/inventory.py, src/stock.py")

            page.goto(f"/evals/runs/{failed.pk}/")
            expect(page.locator("#request-checks li[data-passed=false] .evidence")).to_contain_text(
                "request #9 (step 9, turn 4, segment 2)")

            page.goto(f"/rooms/{room_slug}/")
            page.click("#room-evals a")
            expect(page.get_by_role("heading", name=f"Evals in {run.room.name}")).to_be_visible()
            expect(page.locator("#eval-runs tbody tr")).to_have_count(2)

            # Someone outside the room sees none of it.
            eve = log_in(browser, daphne_server.url, "eve")
            eve.goto("/evals/")
            expect(eve.locator("#eval-runs")).to_have_count(0)
            assert eve.goto(f"/evals/runs/{run.pk}/").status == 404
        finally:
            browser.close()
