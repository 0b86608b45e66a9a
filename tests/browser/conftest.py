"""Browser tests: Debian's /usr/bin/chromium (headless) driven by Playwright from PyPI — no
browser download. Without a browser the tests skip with the reason, unless
STARMALL_REQUIRE_BROWSER=1 (.ci/run sets it): then a missing browser is a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("STARMALL_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "test-screenshots"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no browser at {CHROMIUM} (apt-get install -y chromium fonts-noto-cjk)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def browser():
    reason = _missing()
    if reason:
        if os.environ.get("STARMALL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"STARMALL_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread while it is open; the
    # test's own ORM calls are still plain synchronous code (Playwright's documented setting for
    # Django). Module scope: the loop is closed (and the setting undone) before other modules run,
    # so later tests that use async_to_sync (Channels) do not meet a running loop.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def base_url(live_server) -> str:
    """The live server by address: "localhost" may resolve to ::1 in Chromium, where it is not."""
    return live_server.url.replace("://localhost:", "://127.0.0.1:")


@pytest.fixture
def page_for(browser, base_url):
    """``page_for(username, password)`` -> a logged-in page, 1,400 x 900, Chinese locale; every
    request the page makes is recorded in ``page.requested`` (to check no CDN is used)."""
    contexts = []

    def make(username: str, password: str):
        context = browser.new_context(viewport={"width": 1400, "height": 900}, locale="zh-CN", accept_downloads=True)
        contexts.append(context)
        page = context.new_page()
        page.requested = []
        page.on("request", lambda request: page.requested.append(request.url))
        page.goto(f"{base_url}/admin/login/?next=/admin/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("button[type=submit], input[type=submit]")
        try:
            page.wait_for_url(f"{base_url}/admin/", timeout=15000)
        except Exception:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"login-failed-{username}.png"))
            raise
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def shot():
    """``shot(page, name)``: a full-page screenshot under var/test-screenshots/."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
