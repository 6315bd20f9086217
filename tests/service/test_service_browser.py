"""The web page in a real headless Chromium (Debian's package), driven by Playwright, as a data
steward uses it - with the keyboard only, at 1280x800 and at phone width (390x844): enter a key,
set a budget, de-identify a note in entity mode (the page's default) for a named person, read
the plain report and open the JSON behind "details", upload a CSV, say what happens to each
column, run the job and read the leak check's result. At desktop width also the whole-text
mechanisms ("Stronger: rewrite every word") with the dry run. Every state: no horizontal
overflow, every control has an accessible name (Chromium's own accessibility tree).

A screenshot of each state is saved under ``$DPTEXT_ARTIFACTS`` (default: the test's tmp dir);
with ``DPTEXT_UPDATE_DOCS=1`` (``make screenshots``) the states are written to docs/img/page-*.png
for README.md and docs/service.md."""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None,
                                reason="Debian's chromium is not installed (apt-get install "
                                       "chromium); CI installs it")]
ROOT = Path(__file__).resolve().parents[2]
DOCS_IMG = ROOT / "docs" / "img"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
# Names that are on none of the public lists surrogate names are drawn from (a made-up name
# never equals them), and no place or organisation (whose words the mechanism may return
# unchanged, which the leak check then withholds - by chance): every step is deterministic.
NOTE = ("Marisol Quintero (MRN 4417902) was seen by Dr. Okafor on 3/4/2021 for chest pain. "
        "Call her at 617-555-0142.")
NOTE2 = "Tereza Hollis was seen on 5/6/2022 by Dr. Ngata."
VIEWPORTS = [{"width": 1280, "height": 800}, {"width": 390, "height": 844}]
# what the accessibility tree must name: every control a person operates
CONTROLS = {"textbox", "combobox", "checkbox", "radio", "button", "spinbutton",
            "DisclosureTriangle", "ListBox", "PopUpButton"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for both sizes (the detectors and the mechanism are loaded once); each size
    works in a dataset of its own, so its budgets and people start empty."""
    from service_helpers import Server

    from dptext.ledger import Ledger
    from dptext.service.keys import KeyStore

    tmp = tmp_path_factory.mktemp("page")
    ledger = tmp / "l.sqlite"
    key = KeyStore(Ledger(str(ledger)).url).create("steward")
    s = Server(ledger, tmp / "data").start()
    yield s, key
    s.stop()


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["desktop", "phone"])
def test_page_deidentifies_a_note_and_a_file_with_the_keyboard(server, tmp_path, viewport):
    srv, key = server
    desktop = viewport["width"] == 1280
    shots = Shots(tmp_path, viewport)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport=viewport, accept_downloads=True)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        # the file chooser is intercepted from the start: a listener added only around the key
        # press raced the press (Chromium opened its own dialog first, about 1 run in 3 here)
        choosers: list = []
        page.on("filechooser", lambda chooser: choosers.append(chooser))
        page.goto(srv.url + "/")
        assert page.title().startswith("dptext")
        check_layout(page, viewport)

        # the key: Tab to it from the top of the page, type it, Enter
        tab_to(page, "#key")
        page.keyboard.type(key)
        page.keyboard.press("Enter")
        page.wait_for_selector("#mechanism option[value=custext]", state="attached")
        assert "Key accepted" in page.inner_text("#key-status")
        # entity mode is the default, its controls are shown, the typical range is the
        # mechanism's declared one (the same source as README.md and docs/privacy.md)
        assert page.is_checked("#mode-entities")
        assert page.is_visible("#entity-controls") and page.is_visible("#cat-names")
        assert f"Typical range: {declared_range('custext')}." in page.inner_text("#mech-help")
        # no pre-filled person: optional while no budget is set, and then said what it means
        assert page.input_value("#unit") == ""
        assert page.inner_text("#unit-label") == "Person (optional)"
        assert "its own unit" in page.inner_text("#unit-help")
        check_layout(page, viewport)
        shots.take(page, "1-form", "#how-section")

        # a dataset of this test's own, and a budget per person: now the person is required
        tab_to(page, "#dataset")
        page.keyboard.press("ControlOrMeta+A")
        page.keyboard.type("notes-" + shots.size)
        tab_to(page, "#budget-eps")
        page.keyboard.type("40")
        tab_to(page, "#set-budget")
        page.keyboard.press("Enter")
        page.wait_for_function("document.querySelector('#budget-status').textContent"
                               ".startsWith('Budget set')")
        assert page.inner_text("#unit-label") == "Person (required)"
        assert page.get_attribute("#unit", "aria-required") == "true"

        # the note without a person is refused before anything is sent, focus on the field
        tab_to(page, "#text")
        page.keyboard.type(NOTE)
        tab_to(page, "#run")
        page.keyboard.press("Enter")
        assert "Name the person" in page.inner_text("#run-status")
        assert page.evaluate("document.activeElement.id") == "unit"
        assert page.is_hidden("#out-box")
        page.keyboard.type("patient-17")
        tab_to(page, "#run")
        page.keyboard.press("Enter")
        page.wait_for_selector("#output .tok.ent", timeout=120_000)
        out = page.inner_text("#output")
        for secret in ("Marisol", "Quintero", "Okafor", "4417902", "617-555-0142"):
            assert secret not in out, (secret, out)
        assert "chest pain" in out  # the rest is readable
        # marked by category, with a legend naming what each colour is
        legend = page.inner_text("#legend")
        assert "Names of people" in legend and "Phones, e-mails" in legend
        assert "released as written (not protected)" in legend
        # the plain summary, as the CLI prints it
        summary = page.inner_text("#summary")
        assert "PERSON" in summary and "NOT protected" in summary and "guarantee" in summary
        page.wait_for_function("document.querySelector('#budget').textContent"
                               ".includes('remaining')")
        budget = page.inner_text("#budget")
        assert budget.startswith("patient-17: spent") and "remaining" in budget
        check_layout(page, viewport)
        shots.take(page, "2-text", "#text-section")
        # the JSON only behind "details"
        assert page.is_hidden("#report")
        tab_to(page, "#report-details summary")
        page.keyboard.press("Enter")
        assert page.is_visible("#report") and '"guarantee_scope"' in page.inner_text("#report")
        # the keyboard reaches each marked span and its reason
        tab_to(page, "#output .tok.ent", back=True)
        assert page.inner_text("#hover-reason") != ""
        check_layout(page, viewport)

        # a file: Enter on the drop zone opens the file chooser
        notes = tmp_path / "notes.csv"
        notes.write_text("patient_id,note,doctor\n"
                         f"p1,\"{NOTE}\",Dr Okafor\n"
                         f"p2,\"{NOTE2}\",Dr Ngata\n")
        tab_to(page, "#drop")
        page.keyboard.press("Enter")
        for _ in range(300):  # at most 30 s
            if choosers:
                break
            page.wait_for_timeout(100)
        assert len(choosers) == 1, "Enter on the drop zone opened no file chooser"
        choosers[0].set_files(str(notes))
        page.wait_for_selector("#role-doctor")
        rows = page.eval_on_selector_all("#columns tbody th", "els => els.map(e => e.textContent)")
        assert rows == ["patient_id", "note", "doctor"]
        # nothing chosen yet: the page refuses as the CLI does, naming the columns
        tab_to(page, "#upload")
        page.keyboard.press("Enter")
        status = page.inner_text("#job-status")
        assert "patient_id, note, doctor are not covered" in status
        # a choice per column, by typing the first letter of the choice in each select
        for column, letter in (("patient_id", "r"), ("note", "p"), ("doctor", "d")):
            tab_to(page, f"#role-{column}")
            page.keyboard.type(letter)
        assert [page.input_value(f"#role-{c}") for c in ("patient_id", "note", "doctor")] == \
            ["hash", "field", "drop"]
        # the dataset has a budget: a person column is required, as the person of a text
        tab_to(page, "#upload")
        page.keyboard.press("Enter")
        assert page.inner_text("#job-status").startswith("Choose the person column")
        assert page.evaluate("document.activeElement.id") == "unit-field"
        page.keyboard.type("p")
        assert page.input_value("#unit-field") == "patient_id"
        assert page.inner_text("#job-status") == ""  # the refusal went with the choices
        check_layout(page, viewport)
        shots.take(page, "3-columns", "#file-section")
        tab_to(page, "#upload")
        page.keyboard.press("Enter")
        page.wait_for_selector("#download-output", timeout=180_000)
        assert page.inner_text("#job-status").startswith("Done: 2 released")
        assert page.inner_text("#job-leaks").startswith("Leak check: passed")
        # the release report a reviewer reads (issue 45), in its sandboxed frame
        report = page.frame_locator("#job-report-page").locator("body")
        report.get_by_role("heading", name="Leak check").wait_for(timeout=30_000)
        text = report.inner_text()
        assert "What was replaced" in text and "NOT protected" in text
        assert "Marisol" not in text and "4417902" not in text
        with page.expect_download() as info:
            tab_to(page, "#download-output")
            page.keyboard.press("Enter")
        rows = list(csv.reader(io.StringIO(Path(info.value.path()).read_text())))
        assert rows[0] == ["patient_id", "note"]  # doctor dropped
        assert len(rows) == 3 and rows[1][0] not in ("p1", "p2")  # the id is a pseudonym
        assert "Marisol" not in rows[1][1] and "4417902" not in rows[1][1]
        assert "Tereza" not in rows[2][1] and "Ngata" not in rows[2][1]
        check_layout(page, viewport)
        shots.take(page, "4-file", "#file-section")

        # a failed leak check as the page words it (the job as GET /v1/jobs/{id} gives it;
        # the indices count from 0, the page and the rejects file from 1) - never a value
        failed = page.evaluate("""leakLine({entities: {}, leak_check: {ran: true, records: 3,
            compared: 2, missing: 1, leaks: 2, by_category: {PERSON: 2},
            leaking_records: [0, 2]}})""")
        assert failed.startswith("Leak check: FAILED - 2 identifier(s) survived (PERSON 2) in "
                                 "record(s) 1, 3 of the file"), failed
        if desktop:
            whole_text_flow(page, shots)
        assert errors == []
        browser.close()


def test_page_never_offers_entity_mode_a_server_does_not_list(server):
    """A server whose GET /v1/mechanisms lists no entity parameters (an older one): the page
    disables entity mode and says so, instead of sending an entity request it would ignore."""
    import json

    srv, key = server
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport=VIEWPORTS[0])

        def older(route):
            listed = json.loads(route.fetch().text())
            for m in listed:
                m.pop("entity_parameters", None)
            route.fulfill(json=listed)

        page.route("**/v1/mechanisms", older)
        page.goto(srv.url + "/")
        page.fill("#key", key)
        page.press("#key", "Enter")
        page.wait_for_selector("#mechanism option[value=custext]", state="attached")
        assert page.is_disabled("#mode-entities") and page.is_checked("#mode-whole")
        assert page.is_hidden("#entity-controls")
        assert "does not offer entity mode" in page.inner_text("#mode-note")
        assert page.evaluate("entities()") is None  # nothing entity-like is sent
        browser.close()


def whole_text_flow(page, shots) -> None:
    """"Stronger: rewrite every word": the whole-text mechanisms, the dry run of the cost and
    the word kinds' legend."""
    tab_to(page, "#mode-entities")
    page.keyboard.press("ArrowRight")  # radios move with the arrows
    assert page.is_checked("#mode-whole") and page.is_hidden("#entity-controls")
    assert page.is_visible("#estimate") and page.is_visible("#document-epsilon")
    assert page.inner_text("#mechanism-label") == "Mechanism"
    tab_to(page, "#estimate")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "document.querySelector('#estimate-out').textContent.startsWith('Estimate')")
    assert "fits the person's remaining budget" in page.inner_text("#estimate-out")
    tab_to(page, "#run")
    page.keyboard.press("Enter")
    page.wait_for_selector("#output .tok.privatized")
    kinds = page.eval_on_selector_all("#output .tok", "els => els.map(e => e.className)")
    assert any("privatized" in k for k in kinds) and any("punctuation" in k for k in kinds)
    assert page.get_attribute("#output .tok.privatized", "title").startswith(
        "privatized: drawn by the mechanism")
    assert "privatized" in page.inner_text("#legend")
    assert "Privacy report" in page.inner_text("#summary")
    # the note again would take patient-17 past the budget of 40: the dry run says so
    page.evaluate("document.querySelector('#estimate-out').textContent = ''")
    tab_to(page, "#estimate", back=True)
    page.keyboard.press("Enter")
    page.wait_for_function(
        "document.querySelector('#estimate-out').textContent.startsWith('Estimate')")
    assert "would be withheld" in page.inner_text("#estimate-out")
    shots.take(page, "5-whole", "#text-section")


# ---------------------------------------------------------------------------- helpers
def declared_range(name: str) -> str:
    """The typical epsilon range the mechanism declares (README.md's table, docs/privacy.md
    and ``dptext mechanisms`` print the same; tests/accounting/test_typical_epsilon.py checks
    them)."""
    from dptext.mechanisms.registry import registered

    return registered()[name].typical_epsilon.text


def tab_to(page, selector: str, *, back: bool = False, limit: int = 80) -> None:
    """Press Tab (Shift+Tab with ``back``) until the focus is on ``selector``: the element is
    reachable with the keyboard, in the page's order."""
    key = "Shift+Tab" if back else "Tab"
    for _ in range(limit):
        if page.evaluate("s => { const a = document.activeElement;"
                         " return !!a && a.matches(s); }", selector):
            return
        page.keyboard.press(key)
    raise AssertionError(f"{selector} is not reachable with {key}")


def check_layout(page, viewport: dict) -> None:
    """No horizontal overflow, and every control shown has an accessible name (the names
    Chromium computes, read over one CDP session per page: detaching a session stops the
    page's file chooser from reaching Playwright)."""
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], \
        "the page overflows horizontally"
    if not hasattr(page, "_ax_session"):
        page._ax_session = page.context.new_cdp_session(page)
    nodes = page._ax_session.send("Accessibility.getFullAXTree")["nodes"]
    unnamed = [n.get("role", {}).get("value") for n in nodes
               if not n.get("ignored") and n.get("role", {}).get("value") in CONTROLS
               and not (n.get("name", {}).get("value") or "").strip()]
    assert unnamed == [], f"controls without an accessible name: {unnamed}"


class Shots:
    """Screenshots of the states: the test's artifacts, and docs/img with DPTEXT_UPDATE_DOCS."""

    def __init__(self, tmp_path: Path, viewport: dict) -> None:
        self.size = f"{viewport['width']}x{viewport['height']}"
        self.phone = viewport["width"] < 600
        self.dir = Path(os.environ.get("DPTEXT_ARTIFACTS", tmp_path)) / self.size
        self.dir.mkdir(parents=True, exist_ok=True)
        self.docs = bool(os.environ.get("DPTEXT_UPDATE_DOCS"))

    def take(self, page, name: str, section: str) -> None:
        path = self.dir / f"{name}.png"
        page.locator(section).screenshot(path=str(path))
        if self.docs and (not self.phone or name == "2-text"):
            target = DOCS_IMG / (f"page-{name[2:]}" + ("-phone" if self.phone else "") + ".png")
            small_png(path, target)


def small_png(source: Path, target: Path) -> None:
    """A palette PNG (the page has few colours): a few tens of kB instead of hundreds."""
    from PIL import Image

    target.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(source) as im:
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(
            target, optimize=True)
