"""The packager of a compiled job (job/packager.py): built from the job's own profile, env.toml
and runspec, with no env.toml read again."""

from __future__ import annotations

import subprocess

import pytest

from nemo_runspec.errors import PackagingError
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.packager import packager_for
from nemo_runspec.job.run_config import RunConfig
from tests.nemo_runspec.job.test_run_config import make_spec

PROFILE = '[dev]\nexecutor = "slurm"\naccount = "a"\n'


def test_the_profile_names_the_packager_and_env_toml_gives_its_cache(tmp_path, monkeypatch):
    spec = make_spec(tmp_path, monkeypatch)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "env.toml").write_text(f'[cache]\ndir = "{tmp_path}/shared"\n\n{PROFILE}packager = "code"\n')
    job = compile_job(spec, RunConfig(profile="dev", dry_run=True), check_artifacts=False)
    (tmp_path / "env.toml").unlink()  # read once, by compile_job

    packager, plan = packager_for(job)
    assert (plan.kind, plan.reason) == ("code", "profile key packager (env.toml:7 [dev])")
    assert packager.cache_dir == f"{tmp_path}/shared/packages"
    assert plan.repo_root == str(tmp_path.resolve())


def test_a_packaging_error_names_the_line_of_the_profile(tmp_path, monkeypatch):
    spec = make_spec(tmp_path, monkeypatch)  # tmp_path is no git repository
    (tmp_path / "env.toml").write_text(f'{PROFILE}packager = "git"\n')
    job = compile_job(spec, RunConfig(profile="dev", dry_run=True), check_artifacts=False)
    with pytest.raises(PackagingError, match=r'env\.toml:4: packager = "git" needs a git repository'):
        packager_for(job)
