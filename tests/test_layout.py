"""Tests mirror the library file by file: the tests of ``src/nemo_runspec/a/b.py`` are
``tests/nemo_runspec/a/test_b.py`` or ``test_b_<aspect>.py`` beside it (a leading underscore of
the module is dropped: ``_lazy.py`` -> ``test_lazy.py``); package ``__init__.py`` files are not
counted. The modules without one are EXEMPT, each with why.

Issue 31: at most 10% of the modules may be exempt, each with its reason (an alias module, a module
tested through the command that drives it). A new module without its test file fails; so does an
exempted module that gained one and is still listed (delete its line).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "src" / "nemo_runspec"
TESTS = ROOT / "tests" / "nemo_runspec"
#: at most this share of the library's modules may be exempt (issue 31)
MAX_EXEMPT_SHARE = 0.10

#: module (relative to src/nemo_runspec) -> why it has no test file named after it.
EXEMPT: dict[str, str] = {
    "backends/dry_run.py": (
        "the dry run of one job: every --dry-run CLI test (nemotron/cli/test_dry_run.py and the platform, "
        "Ray and native-plan dry runs) and scripts/dry_run_snapshot.py's 112 cases"
    ),
    "execution/dry_run_display.py": (
        "the job's dry-run view, printed by backends/dry_run.py: the same CLI dry-run tests read it"
    ),
    "evaluation/launcher.py": (
        "tested in evaluation/test_evaluator.py (evaluator.py re-exports it); the evaluator "
        "modules are to be split (issue 31), whose test files follow that split"
    ),
    "slurm/launch.py": (
        "tested in slurm/test_lean_equivalence.py (byte-identical to nemo-run's Experiment, "
        "pinned replayed source), the path three library docstrings cite: rename it together with "
        "them"
    ),
    "execution/backend_job.py": (
        "the platform executors' job (Docker, SkyPilot, DGX Cloud, Lepton), through the CLI in "
        "nemotron/cli/test_platform_dry_runs.py and test_docker_executor.py"
    ),
    "execution/backend_run.py": (
        "runs a platform job through nemo-run: nemotron/cli/test_docker_executor.py, "
        "tests/e2e/test_containers.py (a real Docker engine)"
    ),
    "execution/docker_job.py": (
        "a Docker job's container settings: nemotron/cli/test_docker_executor.py, "
        "tests/e2e/test_containers.py"
    ),
}


def modules() -> list[str]:
    """Every library module, relative to src/nemo_runspec, without the package faces."""
    return sorted(str(p.relative_to(LIBRARY)) for p in LIBRARY.rglob("*.py") if p.name != "__init__.py")


def _test_files_of(module: str) -> list[Path]:
    """The test files named after ``module`` (see the module docstring). ``test_a_b_x.py`` is
    ``a_b.py``'s when that module exists beside ``a.py``, never ``a.py``'s too."""
    path = Path(module)
    folder, stem = TESTS / path.parent, path.stem.lstrip("_")
    longer = [p.stem.lstrip("_") for p in (LIBRARY / path.parent).glob(f"*{stem}_*.py")
              if p.stem.lstrip("_").startswith(f"{stem}_")]
    return sorted(f for f in [*folder.glob(f"test_{stem}.py"), *folder.glob(f"test_{stem}_*.py")]
                  if not any(f.stem == f"test_{other}" or f.stem.startswith(f"test_{other}_") for other in longer))


def test_every_module_has_its_test_file_or_an_exemption() -> None:
    untested = [m for m in modules() if not _test_files_of(m) and m not in EXEMPT]
    assert untested == [], ("library modules without tests/nemo_runspec/<same folder>/test_<module>.py: "
                            f"{untested} (write one; EXEMPT only shrinks)")


def test_exemptions_only_shrink() -> None:
    stale = [m for m in EXEMPT if not (LIBRARY / m).is_file()]
    assert stale == [], f"EXEMPT names modules that no longer exist: {stale} (delete their lines)"
    tested = {m: [str(p.relative_to(ROOT)) for p in _test_files_of(m)] for m in EXEMPT if _test_files_of(m)}
    assert tested == {}, f"exempted modules that have a test file now: {tested} (delete their EXEMPT lines)"
    share = len(EXEMPT) / len(modules())
    assert share <= MAX_EXEMPT_SHARE, (f"{len(EXEMPT)} of {len(modules())} modules are exempt ({share:.0%}; at most "
                                       f"{MAX_EXEMPT_SHARE:.0%}): write their test files")
    assert all(reason.strip() for reason in EXEMPT.values())


def test_the_rule_finds_a_test_file_beside_its_module() -> None:
    # the naming rule on modules whose test files exist today (one plain, one with an aspect,
    # one with the leading underscore dropped)
    assert _test_files_of("backends/dry_run.py") == [] and "backends/dry_run.py" in EXEMPT
    assert TESTS / "slurm" / "test_ledger.py" in _test_files_of("slurm/ledger.py")
    assert _test_files_of("_compat.py") == [TESTS / "test_compat.py"]
    assert _test_files_of("spec/toml_lines.py") == [TESTS / "spec" / "test_toml_lines.py"]
    # a test file of a longer module beside it is not the shorter one's
    assert TESTS / "slurm" / "test_launch_script.py" in _test_files_of("slurm/launch_script.py")
    assert _test_files_of("slurm/launch.py") == []
