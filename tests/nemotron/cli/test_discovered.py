"""Recipe scripts without a command file become commands; `nemotron run SCRIPT` runs any."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.nemotron_cli import NEMOTRON

GOOD = '''"""Say hello from a user recipe."""
# /// script
# [tool.runspec]
# schema = "1"
# name = "team/hello"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
import sys
print("hello", sys.argv[3:])
'''
BROKEN = '# /// script\n# [tool.runspec]\n# schema = "1"\n# name = "team/broken"\n# nodez = 3\n# ///\n'


def _run(tmp: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp / "home"), COLUMNS="200")
    return subprocess.run([str(NEMOTRON), *argv], cwd=tmp, env=env, capture_output=True, text=True, timeout=120)


def _recipes(tmp: Path) -> Path:
    (tmp / "r" / "team" / "config").mkdir(parents=True)
    (tmp / "r" / "team" / "hello.py").write_text(GOOD)
    (tmp / "r" / "team" / "config" / "default.yaml").write_text("greeting: hi\n")
    (tmp / "r" / "team" / "broken.py").write_text(BROKEN)
    return tmp / "r"


def test_recipe_dir_gives_commands_and_a_broken_one_does_not_hide_others(tmp_path: Path) -> None:
    rdir = _recipes(tmp_path)
    helped = _run(tmp_path, "--recipe-dir", str(rdir), "--recipe-dir", str(tmp_path / "nope"), "--help")
    assert helped.returncode == 0 and "team" in helped.stdout and "nano3" in helped.stdout
    assert f"recipe dir {tmp_path / 'nope'} does not exist" in helped.stderr
    group = _run(tmp_path, "--recipe-dir", str(rdir), "team", "--help")
    assert group.returncode == 0, group.stderr
    assert "Say hello from a user recipe." in group.stdout and "failed to load" in group.stdout
    broken = _run(tmp_path, "--recipe-dir", str(rdir), "team", "broken")
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    assert f"error: {rdir / 'team' / 'broken.py'}:5: unknown key 'nodez'" in broken.stderr
    ran = _run(tmp_path, "--recipe-dir", str(rdir), "team", "hello", "+x=1", "--", "--a")
    assert ran.returncode == 0, ran.stderr
    assert "hello ['--a']" in ran.stdout


def test_env_toml_cli_recipe_dirs_and_dry_runs(tmp_path: Path) -> None:
    _recipes(tmp_path)
    (tmp_path / "env.toml").write_text('[cli]\nrecipe_dirs = ["r"]\n\n[dev]\nexecutor = "slurm"\n'
                                       'account = "a"\npartition = "p"\nnodes = 2\n')
    help_ = _run(tmp_path, "team", "hello", "--help")
    assert help_.returncode == 0, help_.stderr
    assert "default" in help_.stdout and "dev" in help_.stdout and "nemotron team hello --dry-run" in help_.stdout
    slurm = _run(tmp_path, "team", "hello", "--batch", "dev", "--dry-run", "greeting=yo")
    assert slurm.returncode == 0, slurm.stderr
    assert "#SBATCH --nodes=2" in slurm.stdout and "greeting: yo" in slurm.stdout
    assert _run(tmp_path, "env", "check").returncode == 0  # recipe_dirs is a known [cli] key


def test_hand_written_command_wins(tmp_path: Path) -> None:
    (tmp_path / "r" / "config").mkdir(parents=True)
    (tmp_path / "r" / "p.py").write_text(GOOD.replace("team/hello", "nano3/pretrain").replace("Say hello", "Fake"))
    (tmp_path / "r" / "config" / "default.yaml").write_text("a: 1\n")
    out = _run(tmp_path, "--recipe-dir", str(tmp_path / "r"), "nano3", "pretrain", "--help")
    assert out.returncode == 0, out.stderr
    assert "Pretrain Nemotron 3 Nano" in out.stdout and "Fake" not in out.stdout


def test_nemotron_run_script(tmp_path: Path) -> None:
    rdir = _recipes(tmp_path)
    script = rdir / "team" / "hello.py"
    ran = _run(tmp_path, "run", str(script), "--", "--b")
    assert ran.returncode == 0 and "hello ['--b']" in ran.stdout, ran.stderr
    dry = _run(tmp_path, "run", str(script), "-d", "greeting=yo")
    assert dry.returncode == 0 and "greeting: yo" in dry.stdout
    missing = _run(tmp_path, "run", str(tmp_path / "nothere.py"))
    assert missing.returncode == 2 and missing.stderr.strip() == f"error: {tmp_path / 'nothere.py'}: script not found"
    broken = _run(tmp_path, "run", str(rdir / "team" / "broken.py"))
    assert broken.returncode == 2 and "unknown key 'nodez'" in broken.stderr and "Traceback" not in broken.stderr


def test_nemotron_run_a_script_without_configs_gets_an_empty_config(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(GOOD.replace('print("hello", sys.argv[3:])',
                                   'import yaml; c = yaml.safe_load(open(sys.argv[2])); c.pop("run"); print("config", c)'))
    ran = _run(tmp_path, "run", str(script), "+lr=0.1", "+name=x")
    assert ran.returncode == 0, ran.stderr
    assert "config {'lr': 0.1, 'name': 'x'}" in ran.stdout
    typo = _run(tmp_path, "run", str(script), "lr=0.1")  # an empty config has no key to set
    assert typo.returncode == 2 and typo.stderr.strip().endswith("(use '+lr=0.1' to add a new key)"), typo.stderr
    named = _run(tmp_path, "run", str(script), "-c", "tiny")  # a config asked for by name needs its dir
    assert named.returncode == 2 and "unknown config 'tiny': config directory does not exist" in named.stderr
    # a runspec that names its config dir keeps the error when the dir is missing
    script.write_text(GOOD.replace("# ///", '# [tool.runspec.config]\n# dir = "./conf"\n# ///'))
    declared = _run(tmp_path, "run", str(script))
    assert declared.returncode == 2, declared.stdout
    assert declared.stderr.strip() == f"error: {tmp_path / 'conf'}: unknown config 'default': config directory does not exist"


def test_a_recipe_under_a_command_is_a_warning_where_its_group_is_listed(tmp_path: Path) -> None:
    """`nano3/pretrain/extra` cannot be a command (`nano3 pretrain` is one): said when
    nano3's commands are listed; `nano3 pretrain` itself runs without searching."""
    (tmp_path / "r" / "config").mkdir(parents=True)
    (tmp_path / "r" / "x.py").write_text(GOOD.replace("team/hello", "nano3/pretrain/extra"))
    (tmp_path / "r" / "config" / "default.yaml").write_text("a: 1\n")
    listed = _run(tmp_path, "--recipe-dir", str(tmp_path / "r"), "nano3", "--help")
    assert listed.returncode == 0, listed.stderr
    warnings = [line for line in listed.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "'nano3 pretrain' is a command, not a group" in warnings[0]
    helped = _run(tmp_path, "--recipe-dir", str(tmp_path / "r"), "nano3", "pretrain", "--help")
    assert helped.returncode == 0 and "warning" not in helped.stderr


def test_a_users_script_named_like_a_hand_written_command_is_told_the_truth(tmp_path: Path) -> None:
    """A user's ``nano3/pretrain`` script does not replace ``nemotron nano3 pretrain`` (the
    hand-written command runs): the warning says so, and how to run the script."""
    (tmp_path / "r" / "config").mkdir(parents=True)
    mine = tmp_path / "r" / "p.py"
    mine.write_text(GOOD.replace("team/hello", "nano3/pretrain").replace("Say hello", "Fake"))
    (tmp_path / "r" / "config" / "default.yaml").write_text("a: 1\n")
    listed = _run(tmp_path, "--recipe-dir", str(tmp_path / "r"), "nano3", "--help")
    assert listed.returncode == 0, listed.stderr
    warnings = [line for line in listed.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [f"warning: {mine}: recipe 'nano3/pretrain' (--recipe-dir) gets no command: "
                        "`nemotron nano3 pretrain` is a hand-written command and runs instead "
                        f"(run this script with `nemotron run {mine}`, or rename it)"]
    assert "wins" not in listed.stderr


def test_a_recipe_name_found_twice_names_the_command_that_runs(tmp_path: Path) -> None:
    rdir = _recipes(tmp_path)
    (tmp_path / "r2" / "config").mkdir(parents=True)
    other = tmp_path / "r2" / "hello.py"
    other.write_text(GOOD.replace("Say hello", "Other hello"))
    (tmp_path / "r2" / "config" / "default.yaml").write_text("a: 1\n")
    listed = _run(tmp_path, "--recipe-dir", str(rdir), "--recipe-dir", str(tmp_path / "r2"), "team", "--help")
    assert listed.returncode == 0, listed.stderr
    assert (f"warning: {other}: recipe name 'team/hello' is taken by {rdir / 'team' / 'hello.py'} (--recipe-dir): "
            "`nemotron team hello` runs that one (rename one of them)") in listed.stderr.splitlines()


def test_recipe_help_says_our_default_packager_differs_from_the_reference(tmp_path: Path) -> None:
    """The packager line of every recipe help (hand-written and generated): the profile's key,
    else our per-recipe default, which is not the reference's ``git`` -- and why."""
    from nemo_runspec.cli.help import PACKAGER_HELP

    rdir = _recipes(tmp_path)
    for argv in (("nano3", "pretrain", "--help"), ("--recipe-dir", str(rdir), "team", "hello", "--help")):
        out = _run(tmp_path, *argv)
        assert out.returncode == 0, out.stderr
        text = " ".join(out.stdout.replace("│", " ").split())
        assert PACKAGER_HELP in text, text
    for part in ("the recipe's default: code", "self_contained", "not the reference's git",
                 "git ships committed files only", "docs/migrating-from-reference.md"):
        assert part in PACKAGER_HELP
    migrating = (Path(__file__).resolve().parents[3] / "docs" / "migrating-from-reference.md").read_text()
    assert "The default packager is not `git`." in migrating
