"""The docs site builds with `mkdocs build --strict`, and that build fails on what it must
(docs/dev/docs-site.md): a broken link, a page missing from the navigation, a public
function without a docstring, a public module missing from the API reference."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")

pytestmark = [pytest.mark.slow]


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    if not MKDOCS.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]'; the test extra has it)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(site)],
                          cwd=root, capture_output=True, text=True, timeout=600, env=env)


def test_site_builds_strict_with_api_reference_and_search(tmp_path):
    proc = _build(ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-4000:]
    site = tmp_path / "site"
    assert (site / "search" / "search_index.json").is_file()
    report_api = (site / "api" / "report.html").read_text()
    assert "nemo_runspec.report.build.build_report" in report_api  # generated from the docstrings
    assert "One reference: a job or pipe report; several: a sweep report of those jobs." in report_api
    reports = (site / "reports.html").read_text()
    assert 'src="images/report-preempted-job.png"' in reports and (site / "images" / "report-preempted-job.png").is_file()
    # every page of docs/ made it into the site
    pages = {p.relative_to(ROOT / "docs").with_suffix(".html") for p in (ROOT / "docs").rglob("*.md")}
    assert all((site / p).is_file() for p in pages), sorted(p for p in pages if not (site / p).is_file())


def test_strict_build_fails_on_each_kind_of_gap(tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copytree(ROOT / "src" / "nemo_runspec", root / "src" / "nemo_runspec",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "mkdocs_hooks.py", root / "scripts")
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    index = root / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    (root / "docs" / "orphan.md").write_text("# Not in nav\n")
    dotted = root / "src" / "nemo_runspec" / "dotted.py"
    dotted.write_text(dotted.read_text() + "\n\ndef helper_without_docstring(x):\n    return x\n")
    (root / "src" / "nemo_runspec" / "brand_new.py").write_text('"""A new public module."""\n')
    proc = _build(root, tmp_path / "site")
    assert proc.returncode != 0
    out = proc.stderr
    assert "'no-such-page.md'" in out
    assert "orphan.md" in out
    assert "public function nemo_runspec.dotted.helper_without_docstring has no docstring" in out
    assert "public module nemo_runspec.brand_new is on no page" in out


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
