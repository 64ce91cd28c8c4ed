"""Open a report page in real headless Chromium (Debian's, driven by playwright) and read it back.

What a test gets (:class:`Rendered`): every named Bokeh data source of the page as
plain lists (``Bokeh.documents[0]``: the plotted series, requeue markers, timeline
bars and events), the page's text, the seconds until every plot was drawn, the
requests the page tried to make (it must make none: no network, no CDN), and a
full-page screenshot written where the test says (its output dir). :func:`visit` loads
any page with the same rules (the docs site's tests use it).

Skips when chromium or playwright is missing (``scripts/browser.sh`` installs
chromium; under CI=true a skip fails the run, see tests/conftest.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")
#: the flags this machine's chromium needs (docs/dev/contributing.md); playwright adds
#: --headless and a fresh profile dir (--user-data-dir) of its own
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

_SOURCES = """() => {
  const out = {};
  for (const m of Bokeh.documents[0].all_models) {
    if (!m.name || m.data === undefined) continue;
    const d = {};
    const entries = m.data instanceof Map ? m.data.entries() : Object.entries(m.data);
    for (const [k, v] of entries) d[k] = Array.from(v);
    out[m.name] = d;
  }
  return out;
}"""
#: every root figure of the document has a view that finished drawing
_DRAWN = """() => {
  if (window.Bokeh === undefined || Bokeh.documents.length === 0) return false;
  const roots = Bokeh.documents[0].roots();
  if (roots.length === 0) return false;
  const views = [...Bokeh.index];
  return roots.every(r => views.some(v => v.model === r && v.has_finished()));
}"""


def chromium() -> str:
    """Path of Debian's chromium, or skip."""
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed (scripts/browser.sh installs it)")
    pytest.importorskip("playwright.sync_api")
    return path


@dataclass
class Rendered:
    """What the browser showed."""

    sources: dict[str, dict[str, list[Any]]]
    text: str
    seconds: float
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    roots: int = 0

    def series(self, name: str) -> dict[int, float]:
        """``step -> value`` of the data source ``name``."""
        data = self.sources[name]
        return dict(zip((int(s) for s in data["step"]), data["value"], strict=True))


def visit(url: str, act: Callable[[Any], T], *, allowed: tuple[str, ...] = ("file:", "data:"),
          timeout_ms: int = 60_000) -> tuple[T, list[str], list[str]]:
    """Load ``url`` in headless chromium and return ``act(page)``, the requests the page tried
    outside ``allowed`` (URL prefixes; each was refused) and the errors it logged."""
    exe = chromium()
    from playwright.sync_api import sync_playwright

    requests: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.set_default_timeout(timeout_ms)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

            def only_allowed(route: Any) -> None:
                if route.request.url.startswith(allowed):
                    route.continue_()
                else:
                    requests.append(route.request.url)
                    route.abort()

            page.route("**/*", only_allowed)
            page.goto(url, wait_until="load", timeout=timeout_ms)
            result = act(page)
        finally:
            browser.close()
    return result, requests, errors


def render(page_path: Path, screenshot: Path | None = None, *, timeout_ms: int = 60_000) -> Rendered:
    """Load ``page_path`` (file://) in headless chromium, wait until every plot is drawn, read it."""

    def read(page: Any) -> Rendered:
        page.wait_for_function(_DRAWN, timeout=timeout_ms)
        seconds = page.evaluate("() => performance.now()") / 1000.0
        sources = page.evaluate(_SOURCES)
        roots = page.evaluate("() => Bokeh.documents[0].roots().length")
        text = page.inner_text("body")
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        return Rendered(sources=sources, text=text, seconds=seconds, roots=roots)

    shown, requests, errors = visit(page_path.absolute().as_uri(), read, timeout_ms=timeout_ms)
    shown.requests, shown.errors = requests, errors
    return shown
