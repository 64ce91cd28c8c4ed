"""Tests mirror the library file by file: the tests of ``src/nemo_runspec/a/b.py`` are
``tests/nemo_runspec/a/test_b.py`` or ``test_b_<aspect>.py`` beside it (a leading underscore of
the module is dropped: ``_lazy.py`` -> ``test_lazy.py``); package ``__init__.py`` files are not
counted. The modules without one are EXEMPT, each with why.

A ratchet (issue 31): EXEMPT is the list of the day the check came in and may only shrink. A new
module without its test file fails; so does an exempted module that gained one and is still
listed (delete its line). The issue's target is at most 10% exempted.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "src" / "nemo_runspec"
TESTS = ROOT / "tests" / "nemo_runspec"
#: len(EXEMPT) on the day the check came in (109 of 167 modules); lower it as entries go.
CEILING = 108

#: module (relative to src/nemo_runspec) -> why it has no test file named after it (yet).
EXEMPT: dict[str, str] = {
    "_cmd.py": "tested in nemo_runspec/execution/test_runspec_cmd.py",
    "_lazy.py": "tested in nemo_runspec/test_public_paths.py",
    "_models.py": "no test file names it",
    "_parser.py": "tested in nemo_runspec/scales/test_scales.py, nemo_runspec/test_runspec_errors_mutants.py (+3 more)",
    "_schema.py": "tested in nemo_runspec/test_runspec_parser.py, nemo_runspec/test_runspec_property.py (+1 more)",
    "_suggest.py": "no test file names it",
    "artifact_registry.py": "alias: the reference's module path (test_public_paths.py imports it)",
    "artifacts/contents.py": "tested in nemo_runspec/artifacts/test_lock_holders.py",
    "artifacts/fsspec_backend.py": "tested in nemo_runspec/artifacts/test_registry_atomicity.py, nemo_runspec/artifacts/test_registry_concurrency.py (+1 more)",
    "artifacts/locking.py": "tested in nemo_runspec/artifacts/test_lock_holders.py, nemo_runspec/artifacts/test_registry_concurrency.py",
    "artifacts/pins.py": "tested in nemo_runspec/artifacts/test_lock_holders.py",
    "artifacts/refs.py": "tested in nemo_runspec/artifacts/test_registry_contract_mutants.py",
    "backends/dry_run.py": "tested in nemo_runspec/test_job.py (show_dry_run)",
    "cli/display.py": "tested in nemotron/cli/test_pipe.py (show_pipeline); the rest are names of execution/dry_run_display.py",
    "cli/execute.py": "tested in nemo_runspec/test_compose.py",
    "cli/recipe_config.py": "alias: the same module as cmdline/recipe_config.py",
    "cli/recipe_typer.py": "tested in nemo_runspec/test_public_paths.py, nemotron/cli/test_root_help.py",
    "cmdline/context.py": "tested in nemo_runspec/cli/test_context.py (cli/context.py is this module)",
    "cmdline/recipe_config.py": "tested in nemo_runspec/cli/test_context.py, nemo_runspec/test_run_config.py (+3 more)",
    "config/credential_values.py": "no test file names it",
    "config/override_values.py": "tested in nemo_runspec/config/test_overrides_mutants.py",
    "config/provenance.py": "no test file names it",
    "config/references.py": "tested in nemo_runspec/test_dollar_rule.py",
    "config/resolvers.py": "tested in nemo_runspec/artifacts/test_registry.py, nemo_runspec/config/test_art_check.py (+4 more)",
    "config/sweep_grammar.py": "tested in nemo_runspec/config/test_sweep.py",
    "config/typed.py": "no test file names it",
    "config/yaml_io.py": "no test file names it",
    "dotted.py": "tested in test_docs_site.py",
    "env/chain.py": "tested in nemotron/cli/test_inputs_limits.py",
    "env/discovery.py": "tested in nemo_runspec/env/test_env_discovery.py, nemo_runspec/env/test_env_mutants.py",
    "env/executor_keys.py": "tested in nemo_runspec/env/test_env_profile.py, nemo_runspec/env/test_env_validation.py",
    "env/file.py": "tested in nemo_runspec/env/test_env_file.py, nemo_runspec/env/test_env_mutants.py (+2 more)",
    "env/model.py": "tested in nemo_runspec/execution/test_backends.py",
    "env/packager_keys.py": "no test file names it",
    "env/profile.py": "tested in nemo_runspec/env/test_env_mutants.py, nemo_runspec/env/test_env_profile.py",
    "env/profiling.py": "no test file names it",
    "env/public_values.py": "no test file names it",
    "env/reference.py": "tested in nemo_runspec/env/test_env_reference.py",
    "env/resources.py": "tested in nemo_runspec/env/test_env_nesting.py",
    "env/sections.py": "tested in nemo_runspec/env/test_env_sections.py",
    "env/validation.py": "tested in nemo_runspec/env/test_env_validation.py, nemo_runspec/slurm/test_script_values.py",
    "env/value_rules.py": "no test file names it",
    "errors.py": "tested in e2e/test_secrets_file_lifecycle.py, e2e/test_slurm_submit.py (+81 more)",
    "eval_launcher.py": "tested in nemo_runspec/test_evaluator.py",
    "exceptions.py": "tested in nemo_runspec/artifacts/test_backend_contract.py, nemo_runspec/artifacts/test_lock_holders.py (+7 more)",
    "execution/_invoke.py": "no test file names it",
    "execution/backend_job.py": "no test file names it",
    "execution/backend_run.py": "no test file names it",
    "execution/docker_job.py": "no test file names it",
    "execution/dry_run_display.py": "tested in nemo_runspec/scales/test_scales.py, nemo_runspec/slurm/test_monitor.py (+2 more)",
    "execution/env_vars.py": "tested in nemo_runspec/artifacts/test_wandb_backend.py, nemo_runspec/test_dollar_rule.py (+2 more)",
    "execution/local.py": "tested in nemo_runspec/execution/test_run_child.py, nemo_runspec/execution/test_runspec_cmd.py",
    "execution/output_copy.py": "tested in nemo_runspec/execution/test_run_child.py",
    "execution/ray.py": "tested in nemo_runspec/env/test_env_profile.py, nemo_runspec/execution/test_executor.py (+1 more)",
    "execution/settings.py": "tested in nemo_runspec/test_dollar_rule.py, nemo_runspec/test_runspec_parser.py",
    "execution/submit_env.py": "tested in nemo_runspec/artifacts/test_lock_holders.py",
    "execution/tunnels.py": "tested in e2e/test_ssh_host_keys.py, nemo_runspec/slurm/test_render.py (+2 more)",
    "filesystem.py": "alias: the reference's module path (test_public_paths.py imports it)",
    "packaging/_archive.py": "tested in nemo_runspec/packaging/test_select.py, nemo_runspec/test_stale.py",
    "packaging/_nemo_run.py": "tested in nemo_runspec/test_unusual_paths.py",
    "packaging/_registry.py": "no test file names it",
    "packaging/git_cli.py": "tested in nemo_runspec/packaging/test_git_as_found.py",
    "packaging/git_index.py": "no test file names it",
    "packaging/manifest.py": "tested in nemo_runspec/packaging/test_code.py, nemo_runspec/packaging/test_misc.py (+1 more)",
    "packaging/progress.py": "tested in nemo_runspec/packaging/test_misc.py",
    "packaging/self_contained.py": "tested in nemo_runspec/packaging/test_select.py",
    "paths.py": "tested in nemo_runspec/config/test_jobdir.py",
    "procs.py": "tested in nemo_runspec/test_locks.py",
    "report/artifacts.py": "no test file names it",
    "report/build.py": "tested in nemotron/cli/test_report_command.py, test_docs_site.py",
    "report/collect.py": "tested in nemo_runspec/report/test_logparse.py",
    "report/fmt.py": "no test file names it",
    "report/identity.py": "no test file names it",
    "report/jobfiles.py": "tested in e2e/test_report_ssh.py",
    "report/model.py": "tested in nemo_runspec/report/test_downsample.py, nemo_runspec/report/test_logparse.py (+2 more)",
    "report/plots.py": "no test file names it",
    "report/summary.py": "no test file names it",
    "scales/apply.py": "no test file names it",
    "scales/check.py": "tested in nemo_runspec/scales/test_scales.py",
    "scales/model.py": "tested in nemo_runspec/scales/test_scales.py",
    "scales/select.py": "tested in nemo_runspec/scales/test_scales.py",
    "scales/show.py": "no test file names it",
    "script_values.py": "tested in nemo_runspec/slurm/test_render_mutants.py, nemo_runspec/test_runspec_property.py (+1 more)",
    "signals.py": "tested in nemo_runspec/slurm/test_client.py, nemo_runspec/slurm/test_exit_codes.py (+2 more)",
    "slurm/attempts.py": "tested in nemo_runspec/slurm/test_resilience.py",
    "slurm/jobs.py": "tested in e2e/test_report_ssh.py, e2e/test_sweeps.py (+2 more)",
    "slurm/last_seen.py": "no test file names it",
    "slurm/launch.py": "tested in nemo_runspec/slurm/test_lean_equivalence.py",
    "slurm/launch_script.py": "no test file names it",
    "slurm/limits.py": "tested in nemo_runspec/slurm/test_queue_faults.py",
    "slurm/package_step.py": "tested in nemo_runspec/test_unusual_paths.py",
    "slurm/prepared.py": "tested in nemo_runspec/slurm/test_monitor.py, nemo_runspec/slurm/test_queue_faults.py (+3 more)",
    "slurm/remote.py": "tested in e2e/test_report_ssh.py, e2e/test_ssh_secret_file_mode.py (+6 more)",
    "slurm/sbatch.py": "no test file names it",
    "slurm/summary.py": "tested in nemo_runspec/slurm/test_monitor.py",
    "stage_selection.py": "no test file names it",
    "step.py": "tested in nemo_runspec/test_pipeline.py, nemotron/cli/test_inputs_limits.py",
    "sweep/collect.py": "no test file names it",
    "sweep/driver.py": "no test file names it",
    "sweep/follow.py": "no test file names it",
    "sweep/here.py": "no test file names it",
    "sweep/invoke.py": "no test file names it",
    "sweep/local.py": "no test file names it",
    "sweep/record.py": "tested in e2e/test_sweeps.py",
    "sweep/states.py": "no test file names it",
    "sweep/submit.py": "tested in nemo_runspec/sweep/test_array.py",
    "utils.py": "tested in nemo_runspec/test_public_paths.py",
    "wandb_switch.py": "tested in nemo_runspec/execution/test_create_executor_profiles.py, nemotron/training/test_wandb_one_rule.py",
}


def modules() -> list[str]:
    """Every library module, relative to src/nemo_runspec, without the package faces."""
    return sorted(str(p.relative_to(LIBRARY)) for p in LIBRARY.rglob("*.py") if p.name != "__init__.py")


def _test_files_of(module: str) -> list[Path]:
    """The test files named after ``module`` (see the module docstring)."""
    path = Path(module)
    folder, stem = TESTS / path.parent, path.stem.lstrip("_")
    return sorted([*folder.glob(f"test_{stem}.py"), *folder.glob(f"test_{stem}_*.py")])


def test_every_module_has_its_test_file_or_an_exemption() -> None:
    untested = [m for m in modules() if not _test_files_of(m) and m not in EXEMPT]
    assert untested == [], ("library modules without tests/nemo_runspec/<same folder>/test_<module>.py: "
                            f"{untested} (write one; EXEMPT only shrinks)")


def test_exemptions_only_shrink() -> None:
    stale = [m for m in EXEMPT if not (LIBRARY / m).is_file()]
    assert stale == [], f"EXEMPT names modules that no longer exist: {stale} (delete their lines)"
    tested = {m: [str(p.relative_to(ROOT)) for p in _test_files_of(m)] for m in EXEMPT if _test_files_of(m)}
    assert tested == {}, f"exempted modules that have a test file now: {tested} (delete their EXEMPT lines)"
    assert len(EXEMPT) <= CEILING, f"EXEMPT grew to {len(EXEMPT)} entries (at most {CEILING}): write the tests"
    assert all(reason.strip() for reason in EXEMPT.values())


def test_the_rule_finds_a_test_file_beside_its_module() -> None:
    # the naming rule on modules whose test files exist today (one plain, one with an aspect,
    # one with the leading underscore dropped)
    assert _test_files_of("env/executor_keys.py") == [] and "env/executor_keys.py" in EXEMPT
    assert TESTS / "slurm" / "test_ledger.py" in _test_files_of("slurm/ledger.py")
    assert _test_files_of("_toml_lines.py") == [TESTS / "test_toml_lines.py"]
