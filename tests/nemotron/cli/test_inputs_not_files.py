"""Issue 30, class 1: things that are not regular files, through the real `nemotron`.

A FIFO named ``*.py`` (or ``config.json``, or a YAML config), ``/dev/zero``, a
socket and symlink loops: every command ends within seconds, with one line
naming the path and what it is (or a warning line where the thing is only
passed over), never a hang, an unbounded read or an internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.errors import RunspecError

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = textwrap.dedent("""\
    # /// script
    # [tool.runspec]
    # name = "mine/hello"
    # [tool.runspec.run]
    # launch = "direct"
    # ///
    print("hello")
""")


def run(tmp: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    base.update(HOME=str(tmp), NEMOTRON_HOME=str(tmp / "nhome"), COLUMNS="200", NO_COLOR="1")
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp, env={**base, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_error(proc: subprocess.CompletedProcess[str], code: int, *named: object) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for item in named:
        assert str(item) in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    d = tmp_path / "recipes"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "hello.py").write_text(SCRIPT)
    os.mkfifo(d / "pipe.py")
    return d


def test_validate_dir_with_a_fifo_script(tmp_path: Path, recipes: Path) -> None:
    one_error(run(tmp_path, "runspec", "validate", str(recipes)), 2, recipes / "pipe.py", "FIFO (named pipe)")


def test_validate_dir_with_symlink_loops(tmp_path: Path) -> None:
    d = tmp_path / "r"
    (d / "a").mkdir(parents=True)
    (d / "a" / "hello.py").write_text(SCRIPT)
    (d / "a" / "up").symlink_to("..")
    one_error(run(tmp_path, "runspec", "validate", str(d)), 2, d / "a" / "up", "symlink loop")


def test_recipe_dir_help_with_a_fifo_lists_the_others(tmp_path: Path, recipes: Path) -> None:
    proc = run(tmp_path, "--recipe-dir", str(recipes), "mine", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "hello" in proc.stdout
    proc = run(tmp_path, "--recipe-dir", str(recipes), "--help")
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {recipes / 'pipe.py'}: script is a FIFO (named pipe)" in proc.stderr


def test_env_toml_recipe_dirs_with_a_fifo_and_a_loop_plain_help(tmp_path: Path, recipes: Path) -> None:
    (recipes / "sub" / "loop").symlink_to("..")
    env = tmp_path / "env.toml"
    env.write_text('[cli]\nrecipe_dirs = ["recipes"]\n')
    proc = run(tmp_path, "mine", "--help", env={"NEMOTRON_ENV_FILE": str(env)})
    assert proc.returncode == 0 and "hello" in proc.stdout, proc.stderr
    proc = run(tmp_path, "--help", env={"NEMOTRON_ENV_FILE": str(env)})
    assert proc.returncode == 0, proc.stderr
    assert "FIFO (named pipe)" in proc.stderr
    assert f"{recipes / 'sub' / 'loop'}: a symlink loop" in proc.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_parse_and_run_of_a_device(tmp_path: Path, device: str) -> None:
    with pytest.raises(RunspecError, match="script is a character device, not a regular file"):
        parse(device)
    one_error(run(tmp_path, "run", device), 2, device, "character device")
    one_error(run(tmp_path, "runspec", "validate", device), 2, device, "character device")


@pytest.mark.parametrize("bad", [3, None, 2.5, ["a.py"]])
def test_parse_says_what_it_got(bad: object) -> None:
    with pytest.raises(TypeError, match=f"parse\\(\\) takes the path of a script \\(str or os.PathLike\\), got {type(bad).__name__}"):
        parse(bad)  # type: ignore[arg-type]


def test_parse_accepts_pathlike_and_str(tmp_path: Path) -> None:
    p = tmp_path / "s.py"
    p.write_text(SCRIPT)
    assert parse(p).name == parse(str(p)).name == "mine/hello"


def test_config_fifo_and_env_file_fifo(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    os.mkfifo(cfg)
    one_error(run(tmp_path, "nano3", "pretrain", "-c", str(cfg), "--dry-run"), 2, cfg, "FIFO")
    env = tmp_path / "env.toml"
    os.mkfifo(env)
    one_error(run(tmp_path, "env", "list", env={"NEMOTRON_ENV_FILE": str(env)}), 2, env, "named pipe")


def test_pattern_packager_dry_run_with_a_symlink_loop(tmp_path: Path) -> None:
    src = tmp_path / "proj" / "src"
    (src / "config").mkdir(parents=True)
    (src / "hello.py").write_text(SCRIPT)
    (src / "config" / "default.yaml").write_text("x: 1\n")
    (src / "up").symlink_to("..")
    env = tmp_path / "env.toml"
    env.write_text(textwrap.dedent(f"""
        [c]
        executor = "slurm"
        account = "a"
        partition = "p"
        container_image = ""
        packager = "pattern"
        packager_include_pattern = ["**/*.py"]
        packager_relative_path = "{tmp_path / 'proj'}"
    """))
    line = one_error(run(tmp_path, "run", str(src / "hello.py"), "--batch", "c", "--dry-run",
                         env={"NEMOTRON_ENV_FILE": str(env)}), 1, src / "up", "symlink loop")
    assert "packager_include_pattern" in line or "env.toml" in line


def test_data_import_copy_of_symlinked_and_looping_dirs(tmp_path: Path) -> None:
    d = tmp_path / "d"
    (d / "train").mkdir(parents=True)
    (d / "train" / "a.bin").write_bytes(b"x")
    (d / "train" / "a.idx").write_bytes(b"x")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("n")
    (d / "linked").symlink_to(tmp_path / "other")
    (d / "loop").symlink_to(".")
    env = {"NEMOTRON_ARTIFACTS_ROOT": str(tmp_path / "reg")}
    one_error(run(tmp_path, "nano3", "data", "import", "pretrain", str(d), "--copy", env=env), 2, d / "loop",
              "symlink loop")
    assert not list((tmp_path / "reg").glob("*/v*")), "nothing is published"
    (d / "loop").unlink()
    os.mkfifo(d / "train" / "fifo")
    one_error(run(tmp_path, "nano3", "data", "import", "pretrain", str(d), "--copy", env=env), 2,
              d / "train" / "fifo", "FIFO")
    (d / "train" / "fifo").unlink()
    proc = run(tmp_path, "nano3", "data", "import", "pretrain", str(d), "--copy", env=env)
    assert proc.returncode == 0, proc.stderr
    payload = tmp_path / "reg" / "nano3-pretrain-data" / "v1"
    assert (payload / "linked" / "notes.txt").read_text() == "n"  # a symlinked dir is copied as its content


def test_model_import_with_a_fifo_config_json(tmp_path: Path) -> None:
    m = tmp_path / "hf"
    m.mkdir()
    os.mkfifo(m / "config.json")
    (m / "model.safetensors").write_bytes(json.dumps({}).encode())
    one_error(run(tmp_path, "nano3", "model", "import", "sft", str(m)), 2, m / "config.json", "FIFO")
