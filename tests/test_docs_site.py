"""The docs site builds with `mkdocs build --strict`, and that build fails on what it must
(docs/dev/docs-site.md): a broken link or anchor, a page missing from the navigation or a
navigation entry without a page, a public function, class, method, property or package
export without a docstring, a public module missing from the API reference. The site is
built with no network (in a network namespace of its own where this runs as root) and its
pages ask for nothing outside the site when a browser opens them from disk; served, the search
box finds pages.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.report_browser import visit

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")
_NOT_FOUND = "Failed to load resource: net::ERR_FILE_NOT_FOUND"

pytestmark = [pytest.mark.slow]


def _no_network_prefix() -> list[str]:  # as root (scripts/test.sh runs so): the build cannot reach out
    """``unshare --net`` (a network namespace with only a loopback that is down) where it works."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return []
    ok = subprocess.run([unshare, "--net", "true"], capture_output=True).returncode == 0
    return [unshare, "--net"] if ok else []


def _build(root: Path, site: Path, *, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    if not MKDOCS.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]'; the test extra has it)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([*prefix, str(MKDOCS), "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(site)],
                          cwd=root, capture_output=True, text=True, timeout=600, env=env)


def _warnings(stderr: str) -> list[str]:
    """mkdocs' WARNING entries, each with its indented continuation lines."""
    entries: list[str] = []
    for line in stderr.splitlines():
        if line.startswith("WARNING"):
            entries.append(line)
        elif entries and line.startswith((" ", "\t")) and not re.match(r"^[A-Z]+ +-", line):
            entries[-1] += "\n" + line
        elif re.match(r"^[A-Z]+ +-", line):
            entries.append("")  # another level's entry ends the last warning
    return [e for e in entries if e]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bool]:
    """The project's docs built strict, with no network where a namespace can take it away;
    and whether it could."""
    out = tmp_path_factory.mktemp("docs") / "site"
    prefix = _no_network_prefix()
    proc = _build(ROOT, out, prefix=tuple(prefix))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, bool(prefix)


@pytest.fixture(scope="module")
def site(built: tuple[Path, bool]) -> Path:
    return built[0]


def test_the_build_needs_no_network(built):
    """The strict build above ran where nothing can be reached: not even this machine's loopback."""
    if not built[1]:
        pytest.skip("no network namespace here (needs root and unshare): the build ran with the network")
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        probe = ["python3", "-c", f"import socket; socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), 3)"]
        assert subprocess.run(probe, capture_output=True).returncode == 0  # here it connects
        assert subprocess.run([*_no_network_prefix(), *probe], capture_output=True).returncode != 0


def test_site_builds_strict_with_api_reference_and_search(site):
    assert (site / "search" / "search_index.json").is_file()
    report_api = (site / "api" / "report.html").read_text()
    assert "nemo_runspec.report.build.build_report" in report_api  # generated from the docstrings
    assert "One reference: a job or pipe report; several: a sweep report of those jobs." in report_api
    reports = (site / "reports.html").read_text()
    assert 'src="images/report-preempted-job.png"' in reports and (site / "images" / "report-preempted-job.png").is_file()
    # every page of docs/ made it into the site
    pages = {p.relative_to(ROOT / "docs").with_suffix(".html") for p in (ROOT / "docs").rglob("*.md")}
    assert all((site / p).is_file() for p in pages), sorted(p for p in pages if not (site / p).is_file())


def test_pages_opened_from_disk_ask_for_nothing_outside_the_site(site):
    """No web fonts, no CDN: the site reads the same on a login node with no way out."""

    def look(page) -> dict:  # noqa: ANN001
        page.wait_for_load_state("networkidle")
        return page.evaluate("""() => ({
            image: [...document.images].filter(i => i.src.endsWith('report-preempted-job.png'))
                                       .map(i => i.complete && i.naturalWidth > 0)[0],
            font: getComputedStyle(document.body).fontFamily })""")

    for name in ("index.html", "reports.html", "api/report.html"):
        shown, requests, errors = visit((site / name).as_uri(), look)
        assert requests == [], (name, requests)
        # from disk the theme looks for search/search_index.js (there is only the JSON index,
        # which file:// pages may not fetch) and hides the search box: search wants a server
        assert [e for e in errors if "search_index.js" not in e and e != _NOT_FOUND] == [], (name, errors)
        assert errors.count(_NOT_FOUND) <= 1, (name, errors)
        assert "Roboto" not in shown["font"], shown["font"]
        if name == "reports.html":
            assert shown["image"] is True  # the screenshot on the page loads


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1, as ``python -m http.server -d site`` serves it."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def test_the_search_box_finds_pages(served):
    def search(page) -> list[str]:  # noqa: ANN001
        page.fill("input.md-search__input", "nsys-rep")
        page.wait_for_selector("li.md-search-result__item a", timeout=30_000)
        return page.eval_on_selector_all("li.md-search-result__item a", "els => els.map(e => e.href)")

    links, requests, errors = visit(served + "index.html", search, allowed=(served, "data:", "blob:"))
    assert requests == [] and errors == []
    assert any(link.startswith(served + "reports.html") for link in links), links


def test_strict_build_fails_on_each_kind_of_gap(tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copytree(ROOT / "src" / "nemo_runspec", root / "src" / "nemo_runspec",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "scripts").mkdir()
    for hook in ("mkdocs_hooks.py", "griffe_rst.py"):
        shutil.copy(ROOT / "scripts" / hook, root / "scripts")
    config = (ROOT / "mkdocs.yml").read_text()
    assert "      - Promises: dev/promises.md\n" in config
    (root / "mkdocs.yml").write_text(config.replace("      - Promises: dev/promises.md\n",
                                                    "      - Promises: dev/promises.md\n      - Gone: dev/gone.md\n"))
    index = root / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [the missing page](no-such-page.md) and "
                     "[a missing section](cli.md#no-such-section).\n")
    (root / "docs" / "orphan.md").write_text("# Not in nav\n")
    pkg = root / "src" / "nemo_runspec"
    dotted = pkg / "runtime" / "dotted.py"
    dotted.write_text(dotted.read_text() + "\n\ndef helper_without_docstring(x):\n    return x\n\n\n"
                      "class Holder:\n    \"\"\"Holds.\"\"\"\n\n    @property\n    def size(self):\n        return 1\n")
    parser = pkg / "spec" / "parser.py"
    text = parser.read_text()
    start = text.index('    """Parse the ``[tool.runspec]`` metadata')
    parser.write_text(text[:start] + text[text.index('"""', start + 8) + 4:])  # parse() loses its docstring
    (pkg / "brand_new.py").write_text('"""A new public module."""\n')

    proc = _build(root, tmp_path / "site")
    assert proc.returncode != 0
    warnings = _warnings(proc.stderr)
    expected = [
        "'no-such-page.md', but the target is not found",
        "'cli.md#no-such-section', but the doc 'cli.md' does not contain an anchor",
        ("not included in the \"nav\" configuration:", "\n  - orphan.md"),
        "'dev/gone.md' is included in the 'nav' configuration, which is not found",
        "public function nemo_runspec.runtime.dotted.helper_without_docstring has no docstring",
        "public property nemo_runspec.runtime.dotted.Holder.size has no docstring",
        "public export nemo_runspec.parse (nemo_runspec.spec.parser.parse) has no docstring",
        "public function nemo_runspec.spec.parser.parse has no docstring",  # spec/ is public
        "public module nemo_runspec.brand_new is on no page",
    ]
    for gap in expected:
        parts = gap if isinstance(gap, tuple) else (gap,)
        assert sum(all(p in w for p in parts) for w in warnings) == 1, (gap, warnings)
    # nothing else went wrong: each gap is one warning, and they are what stopped the build
    assert len(warnings) == len(expected), warnings
    assert f"Aborted with {len(expected)} warnings in strict mode!" in proc.stdout + proc.stderr


def test_rest_docstrings_become_markdown():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from griffe_rst import rst_to_markdown
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    text = ("See :func:`~nemo_runspec.slurm.ledger.find` and :class:`PreparedJob`.\n\nUse it so::\n\n"
            "    job = find('168')\n    print(job)\n\nThen:\n\n"
            "======  =====\nmodule  holds\n======  =====\n``a``   one\n``b``   two\n======  =====\n")
    assert rst_to_markdown(text) == (
        "See `find` and `PreparedJob`.\n\nUse it so:\n\n```\njob = find('168')\nprint(job)\n```\n\nThen:\n\n"
        "| module | holds |\n|---|---|\n| ``a`` | one |\n| ``b`` | two |\n")
