#!/usr/bin/env python3
"""Mutation testing of the core modules with mutmut; writes bench/results/mutation.json.

    .venv/bin/python scripts/mutation.py                  # every module in MODULES
    .venv/bin/python scripts/mutation.py secrets env      # only these
    .venv/bin/python scripts/mutation.py --list           # module names, files, tests

For each module: a scratch copy of src/ and tests/ in .mutmut/<module>/ with a
pyproject.toml that tells mutmut which files to mutate and which (fast, unit) test
files to run; `mutmut run` there (it writes its mutants/ copy inside that scratch dir,
never into src/); the results read back from mutmut's .meta files. Each run is capped
(--timeout) and uses --max-children processes (1 by default: the machine is shared).

Survivors that cannot be killed (equivalent mutants) are listed, each with the reason,
in docs/dev/mutation-equivalents.toml; a survivor listed neither there nor killed is
"unexplained" and the script exits 1. It also exits 1 when a listed equivalent of a
module it ran is not among that run's survivors: the function moved ("no such mutant")
or changed, and mutmut numbers mutants per function, so the name may now belong to
another mutant. Each entry records the git commit it was run at (and which of its files
differed from that commit). The diff of every survivor is written to
.mutmut/<module>/survivors.diff. docs/dev/mutation.md explains the scores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutmut"
RESULTS = ROOT / "bench" / "results" / "mutation.json"
EQUIVALENTS = ROOT / "docs" / "dev" / "mutation-equivalents.toml"

# mutmut's exit codes (mutmut.stats.status_by_exit_code), with its status names made
# identifiers. A mutant whose tests were stopped at the CPU limit (SIGXCPU: -24, 24, 152,
# 255) is a timeout, i.e. detected; a crash of the test process (-11, -9) is detected too.
_STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no_tests", 33: "no_tests",
           34: "skipped", 35: "suspicious", 36: "timeout", 37: "killed", 2: "interrupted",
           None: "not_checked", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout",
           -11: "segfault", -9: "segfault"}
_DETECTED = ("killed", "timeout", "segfault")


@dataclass(frozen=True)
class Module:
    mutate: tuple[str, ...]
    tests: tuple[str, ...]


MODULES: dict[str, Module] = {
    "runspec": Module(
        # spec/toml_lines.py: the key -> line map and deepest_line that runspec blocks and
        # env.toml errors both point with.
        ("src/nemo_runspec/spec/pep723.py", "src/nemo_runspec/spec/parser.py", "src/nemo_runspec/spec/toml_lines.py"),
        # Not test_schema_property.py: Hypothesis shrinks every failure it finds, which
        # takes seconds per killed mutant; the deterministic tests must state the rules.
        ("tests/nemo_runspec/spec/test_parser.py", "tests/nemo_runspec/spec/test_pep723_mutants.py",
         "tests/nemo_runspec/spec/test_parser_errors_mutants.py", "tests/nemo_runspec/spec/test_toml_lines.py"),
    ),
    "env": Module(
        ("src/nemo_runspec/env/file.py", "src/nemo_runspec/env/profile.py"),
        ("tests/nemo_runspec/env/test_file.py", "tests/nemo_runspec/env/test_profile.py",
         "tests/nemo_runspec/env/test_file_nesting.py", "tests/nemo_runspec/env/test_profile_mutants.py"),
    ),
    "overrides": Module(
        ("src/nemo_runspec/config/overrides.py",),
        ("tests/nemo_runspec/config/test_overrides.py", "tests/nemo_runspec/config/test_loader.py",
         "tests/nemo_runspec/config/test_override_values_mutants.py"),
    ),
    "secrets": Module(
        ("src/nemo_runspec/secrets.py", "src/nemo_runspec/execution/secret_file.py"),
        ("tests/nemo_runspec/test_secrets.py", "tests/nemo_runspec/execution/test_secret_file.py",
         "tests/nemo_runspec/test_secrets_mutants.py"),
    ),
    "sbatch": Module(
        ("src/nemo_runspec/slurm/render.py", "src/nemo_runspec/script_values.py"),
        ("tests/nemo_runspec/slurm/test_render.py", "tests/nemo_runspec/test_script_values.py",
         "tests/nemo_runspec/slurm/test_render_mutants.py"),
    ),
    "artifacts": Module(
        ("src/nemo_runspec/artifacts/fsspec_backend.py", "src/nemo_runspec/artifacts/registry.py",
         "src/nemo_runspec/artifacts/refs.py"),
        ("tests/nemo_runspec/artifacts/test_registry.py",
         "tests/nemo_runspec/artifacts/test_registry_atomicity.py",
         "tests/nemo_runspec/artifacts/test_registry_corrupt.py",
         "tests/nemo_runspec/artifacts/test_backend_contract.py",
         "tests/nemo_runspec/artifacts/test_registry_mutants.py",
         "tests/nemo_runspec/artifacts/test_registry_contract_mutants.py"),
    ),
    "sharding": Module(
        ("src/nemotron/data_prep/sharding.py",),
        ("tests/nemotron/data_prep/test_units.py", "tests/nemotron/data_prep/test_sharding_mutants.py"),
    ),
}


_ALSO_COPY = ("env.toml.example", "README.md", "docs")


#: mutmut's mutant names and exit codes change between releases; the equivalents list
#: and the scores in bench/results/mutation.json are for this one.
MUTMUT_VERSION = "3.8.1"


def _mutmut() -> str:
    return str(Path(sys.executable).parent / "mutmut")


def _check_mutmut() -> str | None:
    """Why mutmut cannot be used here, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mutmut")
    except PackageNotFoundError:
        found = None
    if found != MUTMUT_VERSION:
        return (f"needs mutmut {MUTMUT_VERSION} (found {found or 'none'}): "
                f"{sys.executable} -m pip install 'mutmut=={MUTMUT_VERSION}'")
    return None


def _prepare(name: str, module: Module, deselect: list[str]) -> Path:
    """A fresh scratch project: src/, tests/ and a pyproject.toml with this module's config."""
    work = WORK / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", "*.egg-info")
    shutil.copytree(ROOT / "src", work / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    for extra in _ALSO_COPY:  # files some tests read (the example env.toml, the docs)
        if (ROOT / extra).is_dir():
            shutil.copytree(ROOT / extra, work / extra, ignore=ignore)
        elif (ROOT / extra).exists():
            shutil.copy2(ROOT / extra, work / extra)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tests = [t for t in module.tests if (ROOT / t).exists()]
    config = {"tool": {
        "pytest": project["tool"]["pytest"],
        "mutmut": {
            "source_paths": ["src"],
            "only_mutate": list(module.mutate),
            "pytest_add_cli_args_test_selection": tests,
            "pytest_add_cli_args": ["-p", "no:cacheprovider", "-W", "ignore", "-q",
                                    *(f"--deselect={d}" for d in deselect)],
            "use_git_change_detection": False,
            # A mutant that loops is stopped after (test time + 1 s) * 4 * 2 CPU seconds
            # (mutmut's default multiplier, 15, lets one such mutant hold a core for minutes).
            "timeout_multiplier": 4.0,
            "also_copy": list(_ALSO_COPY),
        },
    }}
    (work / "pyproject.toml").write_text(tomli_w.dumps(config))
    return work


def _run(work: Path, max_children: int, timeout: float) -> tuple[int | None, float]:
    """`mutmut run` in its own process group, killed as a group at the time cap."""
    start = time.monotonic()
    log = (work / "mutmut.log").open("w")
    env = {**os.environ, "CI": "", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen([_mutmut(), "run", "--max-children", str(max_children)], cwd=work,
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        rc: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        rc = None
    log.close()
    return rc, time.monotonic() - start


def _results(work: Path, module: Module) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for path in module.mutate:
        meta = work / "mutants" / (path + ".meta")
        if not meta.exists():
            continue
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            statuses[key] = _STATUS.get(code, "suspicious")
    return statuses


def _dotted(path: str) -> str:
    """src/nemo_runspec/env/file.py -> nemo_runspec.env.file (the prefix of its mutant names)."""
    return path.removeprefix("src/").removesuffix(".py").replace("/", ".")


def _listed_for(module: Module, equivalents: dict[str, str]) -> list[str]:
    """The equivalents listed for mutants of this module's files."""
    prefixes = tuple(_dotted(p) + "." for p in module.mutate)
    return sorted(k for k in equivalents if k.startswith(prefixes))


def _git_state(module: Module) -> dict[str, object]:
    """The commit the run was made at, and whether the module's files differed from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.rstrip() if done.returncode == 0 else ""  # porcelain lines start with a space
    dirty = git("status", "--porcelain", "--", *module.mutate, *module.tests)
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty_files": sorted(line[3:] for line in dirty.splitlines())}


def _survivor_changes(work: Path) -> dict[str, str]:
    """Each survivor's changed lines ("- old / + new"), read back from survivors.diff."""
    path = work / "survivors.diff"
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    for block in path.read_text().split("### ")[1:]:
        name, _, body = block.partition("\n")
        out[name.strip()] = " / ".join(
            " ".join(ln.split()) for ln in body.splitlines()
            if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
    return out


def _write_survivor_diffs(work: Path, survivors: list[str]) -> None:
    with (work / "survivors.diff").open("w") as out:
        for name in survivors:
            shown = subprocess.run([_mutmut(), "show", name], cwd=work, capture_output=True, text=True)
            out.write(f"### {name}\n{shown.stdout}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help=f"modules to run (default all: {', '.join(MODULES)})")
    ap.add_argument("--max-children", type=int, default=1, help="parallel mutant workers (default 1)")
    ap.add_argument("--timeout", type=float, default=1800, help="cap per module run, seconds")
    ap.add_argument("--list", action="store_true", help="print the modules and exit")
    ap.add_argument("--baseline", action="store_true",
                    help="without the tests/**/test_*_mutants.py files (written to kill survivors): "
                         "the score before them, stored as the module's 'before'")
    ap.add_argument("--report", action="store_true",
                    help="no run: recount the last run's results in .mutmut/ (after editing the equivalents)")
    ap.add_argument("--accept-changes", action="store_true",
                    help="record the mutants now behind the listed equivalents as the ones explained "
                         "(after checking survivors.diff against the reasons in the equivalents file)")
    ap.add_argument("--deselect", action="append", default=[], metavar="NODEID",
                    help="leave out a test that fails without any mutant (mutmut needs a green run)")
    args = ap.parse_args()
    if args.list:
        for name, module in MODULES.items():
            print(f"{name}: mutate {' '.join(module.mutate)}\n    tests {' '.join(module.tests)}")
        return 0
    problem = _check_mutmut()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        ap.error(f"unknown module(s) {unknown}; known: {', '.join(MODULES)}")
    equivalents: dict[str, str] = (
        tomllib.loads(EQUIVALENTS.read_text()) if EQUIVALENTS.exists() else {})
    report = {
        "tool": f"mutmut {MUTMUT_VERSION}",
        "how": "scripts/mutation.py MODULE: mutmut run over the module's files with only its unit "
               "test files (see 'tests'); score = killed / (mutants - equivalent)",
    }
    failed = False
    for name in args.modules or list(MODULES):
        module = MODULES[name]
        print(f"== {name}: {' '.join(module.mutate)}", flush=True)
        if args.baseline:
            module = Module(module.mutate, tuple(t for t in module.tests if not t.endswith("_mutants.py")))
        last: dict[str, object] = {}
        if args.report:
            work = WORK / name
            if RESULTS.exists():
                last = json.loads(RESULTS.read_text()).get("modules", {}).get(name, {})
            rc, seconds = (0 if last.get("completed") else None), float(last.get("seconds", 0.0))  # type: ignore[arg-type]
            module = Module(module.mutate, tuple(last.get("tests", module.tests)))  # type: ignore[arg-type]
        else:
            work = _prepare(name, module, args.deselect)
            rc, seconds = _run(work, args.max_children, args.timeout)
        statuses = _results(work, module)
        counts: dict[str, int] = {}
        for status in statuses.values():
            counts[status] = counts.get(status, 0) + 1
        not_killed = sorted(k for k, s in statuses.items() if s not in _DETECTED)
        equivalent = [k for k in not_killed if k in equivalents]
        unexplained = [k for k in not_killed if k not in equivalents]
        # A listed equivalent that is no survivor of this run names nothing (its function
        # moved or was removed: "dangling") or, worse, another mutant (the function changed
        # and mutmut renumbered its mutants; the mutant now behind that name was killed).
        # Either way the list no longer describes the code: fix it before trusting a score.
        stale = [k for k in _listed_for(module, equivalents) if k not in not_killed]
        if rc == 0 and not args.report:
            _write_survivor_diffs(work, not_killed)
        # A listed name that survives may still be another mutant than the one explained
        # (renumbered by a change to its function): its change is recorded with the entry and
        # compared with the previous run's.
        changes = _survivor_changes(work)
        on_disk = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        previous = on_disk.get("modules", {}).get(name, {})
        before_changes: dict[str, str] = previous.get("equivalent_changes", {})
        stale_why = {k: ("killed" if k in statuses else "no such mutant") for k in stale}
        for k in equivalent:
            if (before_changes.get(k) and changes.get(k) and before_changes[k] != changes[k]
                    and not args.accept_changes):
                stale.append(k)
                stale_why[k] = f"another mutant now: was {before_changes[k]!r}, is {changes[k]!r}"
        total = len(statuses)
        killed = sum(counts.get(s, 0) for s in _DETECTED)
        denominator = total - len(equivalent)
        entry = {
            "command": f".venv/bin/python scripts/mutation.py {name}",
            "mutate": list(module.mutate),
            "tests": [t for t in module.tests if (ROOT / t).exists()],
            "date": (last.get("date") if args.report else None) or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **({k: last.get(k) for k in ("commit", "dirty_files")} if args.report else _git_state(module)),
            "seconds": round(seconds, 1),
            "completed": rc == 0,
            "mutants": total,
            "counts": counts,
            "killed": killed,
            "equivalent": equivalent,
            "unexplained_survivors": unexplained,
            "stale_equivalents": stale_why,
            # the change each listed name was explained for; kept as it was while it differs
            # from the mutant now behind the name (until --accept-changes after a review)
            "equivalent_changes": {k: (before_changes[k] if k in stale else changes.get(k, before_changes.get(k, "")))
                                   for k in equivalent},
            "score": round(killed / denominator, 4) if denominator else None,
            "raw_score": round(killed / total, 4) if total else None,
        }
        if args.baseline:
            summary = {k: entry[k] for k in ("command", "tests", "date", "commit", "dirty_files", "completed",
                                             "mutants", "counts", "killed", "raw_score")}
            summary["command"] += " --baseline"
            entry = {**previous, "before": summary}
        elif "before" in previous:
            entry["before"] = previous["before"]
        print(f"   {killed}/{total} killed, {len(equivalent)} equivalent, "
              f"{len(unexplained)} unexplained; {seconds:.0f}s; rc={rc}; "
              f"survivors: {work / 'survivors.diff'}", flush=True)
        for key, why in entry["stale_equivalents"].items():  # type: ignore[union-attr]
            print(f"   stale entry in {EQUIVALENTS.relative_to(ROOT)}: {key} ({why})", file=sys.stderr)
        # The equivalents are only checked against a full run (the baseline's survivors differ).
        failed = failed or rc != 0 or bool(unexplained) or (bool(stale) and not args.baseline)
        # Re-read before writing: another run may have updated other modules meanwhile.
        current = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        current.update(report)
        current.setdefault("modules", {})[name] = entry
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
