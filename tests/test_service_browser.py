"""The web page in a real headless Chromium (Debian's package), driven by Playwright: enter a
key, sanitize a text, see the marked tokens and the budget, upload a CSV, download the result.
A screenshot of each step is saved under ``$DPTEXT_ARTIFACTS`` (default: the test's tmp dir)
and, with ``DPTEXT_UPDATE_DOCS=1``, the text step as docs/img/service.png for the README."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="Debian's chromium is not installed (apt-get install "
                                       "chromium); CI installs it")
ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture()
def server(tmp_path):
    from service_helpers import Server

    from dptext.ledger import Ledger
    from dptext.service.keys import KeyStore

    ledger = tmp_path / "l.sqlite"
    key = KeyStore(Ledger(str(ledger)).url).create("steward")
    s = Server(ledger, tmp_path / "data").start()
    yield s, key
    s.stop()


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800},
                                      {"width": 390, "height": 844}], ids=["desktop", "phone"])
def test_page_sanitizes_a_text_and_a_file(server, tmp_path, viewport):
    srv, key = server
    shots = Path(os.environ.get("DPTEXT_ARTIFACTS", tmp_path)) / viewport_name(viewport)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport=viewport, accept_downloads=True)
        page.goto(srv.url + "/")
        assert page.title().startswith("dptext")
        # keyboard only for the key: focus, type, Enter on the button
        page.focus("#key")
        page.keyboard.type(key)
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        page.wait_for_selector("#mechanism option[value=custext]", state="attached")
        assert "Key accepted" in page.inner_text("#key-status")
        assert "Typical range" in page.inner_text("#mech-help")
        page.screenshot(path=str(shots / "1-key.png"), full_page=True)

        page.fill("#budget-eps", "40")
        page.click("#set-budget")
        page.wait_for_function("document.querySelector('#budget-status').textContent.length > 0")
        page.fill("#text", "Alice Smith was seen by Dr. Jones in Boston for chest pain.")
        page.fill("#unit", "alice")
        # the dry run: what the text would cost alice, nothing charged
        page.click("#estimate")
        page.wait_for_function(
            "document.querySelector('#estimate-out').textContent.startsWith('Estimate')")
        assert "fits the person's remaining budget" in page.inner_text("#estimate-out")
        page.click("#run")
        page.wait_for_selector("#output .tok.privatized")
        kinds = page.eval_on_selector_all("#output .tok", "els => els.map(e => e.className)")
        assert any("privatized" in k for k in kinds) and any("punctuation" in k for k in kinds)
        title = page.get_attribute("#output .tok.privatized", "title")
        assert title.startswith("privatized: drawn by the mechanism")
        page.wait_for_function("document.querySelector('#budget').textContent.includes('spent')")
        budget = page.inner_text("#budget")
        assert "alice: spent" in budget and "remaining" in budget
        assert '"document_epsilon"' in page.inner_text("#report")
        # the same text again would take alice past her budget of 40: the dry run says so
        page.evaluate("document.querySelector('#estimate-out').textContent = ''")
        page.click("#estimate")
        page.wait_for_function(
            "document.querySelector('#estimate-out').textContent.startsWith('Estimate')")
        assert "would be withheld" in page.inner_text("#estimate-out")
        page.focus("#output .tok.privatized")  # keyboard reaches the reason too
        assert page.inner_text("#hover-reason").startswith("privatized")
        page.screenshot(path=str(shots / "2-text.png"), full_page=True)
        if viewport["width"] == 1280 and os.environ.get("DPTEXT_UPDATE_DOCS"):
            (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ROOT / "docs" / "img" / "service.png"), full_page=True)

        csv = tmp_path / "notes.csv"
        csv.write_text("text,author\n\"Bob went to Paris\",bob\n\"Carol is well\",carol\n")
        page.set_input_files("#file", str(csv))
        page.fill("#unit-field", "author")
        page.click("#upload")
        page.wait_for_selector("#download-output", timeout=120_000)
        assert "Done: 2 released" in page.inner_text("#job-status")
        with page.expect_download() as info:
            page.click("#download-output")
        downloaded = Path(info.value.path()).read_text()
        # the person column is dropped from the output unless kept or hashed (issue 31)
        assert downloaded.splitlines()[0] == "text"
        assert len(downloaded.splitlines()) == 3
        page.screenshot(path=str(shots / "3-file.png"), full_page=True)
        # nothing overflows the viewport horizontally (readable at this size)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"] + 1
        browser.close()


def viewport_name(v: dict) -> str:
    return f"{v['width']}x{v['height']}"
