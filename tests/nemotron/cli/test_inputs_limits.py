"""Issue 30, class 5: limits and shapes checked before anything is submitted, profile
resolution in linear time, and errors of bounded size.

(Type checks of override values are issue 27's, tested with the override parser.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nemo_runspec import errors, parse_text
from nemo_runspec.env import load_env_file, load_env_profile
from nemo_runspec.errors import EnvFileError, RunspecError

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = textwrap.dedent("""\
    # /// script
    # [tool.runspec]
    # name = "{name}"
    # [tool.runspec.run]
    # launch = "direct"
    # ///
    print("hi")
""")
PROFILE = textwrap.dedent("""\
    [c]
    executor = "slurm"
    account = "a"
    partition = "p"
    container_image = ""
""")


def run(tmp: Path, *args: str, env_toml: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(tmp), NEMOTRON_HOME=str(tmp / "nhome"), COLUMNS="200", NO_COLOR="1")
    if env_toml is not None:
        env["NEMOTRON_ENV_FILE"] = str(env_toml)
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def _script(tmp: Path, name: str = "mine/hello") -> Path:
    (tmp / "config").mkdir(exist_ok=True)
    (tmp / "config" / "default.yaml").write_text("x: 1\n")
    p = tmp / "hello.py"
    p.write_text(SCRIPT.format(name=name))
    return p


@pytest.mark.parametrize(("length", "ok"), [(64, True), (65, False), (300, False)])
def test_job_name_prefix_length_is_checked_up_front(tmp_path: Path, length: int, ok: bool) -> None:
    env = tmp_path / "env.toml"
    env.write_text(PROFILE + f'job_name_prefix = "{"p" * length}"\n')
    proc = run(tmp_path, "run", str(_script(tmp_path, "g/" + "n" * 126)), "--batch", "c", "--dry-run", env_toml=env)
    if ok:
        assert proc.returncode == 0, proc.stderr
        # the longest job name still gives log file names under 255 bytes
        names = [w.rsplit("/", 1)[-1] for w in proc.stdout.split() if "log-" in w or "sbatch_" in w]
        assert names and all(len(n.replace("%j", "4294967295").replace("${SLURM_RESTART_COUNT:-0}", "999")
                                 .encode()) <= 255 for n in names), names
    else:
        assert proc.returncode == 2
        line = proc.stderr.strip()
        assert line == (f"error: {env}:6: key 'job_name_prefix' in [c]: is {length} characters long; at most 64 "
                        "(it is part of the job's log file names, which must fit in 255 bytes)"), line


def test_runspec_name_length() -> None:
    parse_text(SCRIPT.format(name="g/" + "n" * 126), "a.py")
    with pytest.raises(RunspecError) as info:
        parse_text(SCRIPT.format(name="g/" + "n" * 127), "a.py")
    assert (info.value.line, info.value.key) == (3, "name")
    assert info.value.problem == "'name' is 129 characters long; at most 128"


STAGES = ["a", "b", "c", "d"]


def test_reversed_stage_range_through_the_cli(tmp_path: Path) -> None:
    proc = run(tmp_path, "nano3", "pipe", "-c", "tiny", "--stages", "sft:pretrain", "--dry-run")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: stage range 'sft:pretrain' is reversed: sft runs after pretrain (write pretrain:sft")
    assert "Traceback" not in proc.stderr


def _deep(path: Path, n: int) -> Path:
    path.write_text(PROFILE.replace("[c]", "[p0]") + "".join(f'[p{i}]\nextends = "p{i - 1}"\n' for i in range(1, n)))
    return path


def test_a_1000_deep_chain_through_env_check(tmp_path: Path) -> None:
    proc = run(tmp_path, "env", "check", env_toml=_deep(tmp_path / "env.toml", 1000))
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.count("ok [p") == 1000


def test_a_1000_profile_cycle_is_one_short_line(tmp_path: Path) -> None:
    env = tmp_path / "env.toml"
    env.write_text("".join(f'[p{i}]\nextends = "p{(i + 1) % 1000}"\n' for i in range(1000)))
    expected = (f"error: {env}:2: extends cycle of 1000 profile(s): p0 -> p1 -> p2 -> p3 -> ... (994 more) -> "
                "p998 -> p999 -> p0 (one profile of the cycle must not extend another)")
    for args in (["env", "check"], ["env", "show", "p500"], ["run", str(_script(tmp_path)), "--run", "p7", "--dry-run"]):
        proc = run(tmp_path, *args, env_toml=env)
        assert proc.returncode == 2, args
        assert proc.stderr.strip() == expected, (args, proc.stderr[:300])
    listing = run(tmp_path, "env", "list", env_toml=env)
    assert listing.returncode == 2 and listing.stderr.strip() == expected
    assert len(listing.stdout) < 200 * 1000  # one table row per profile, not the cycle in each


def test_profiles_leading_into_a_cycle_get_the_cycle(tmp_path: Path) -> None:
    env = tmp_path / "env.toml"
    env.write_text('[x]\nextends = "b"\n[a]\nextends = "b"\n[b]\nextends = "a"\n')
    ef = load_env_file(env)
    messages = set()
    for name in ("x", "a", "b"):
        with pytest.raises(EnvFileError) as info:
            load_env_profile(name, ef)
        messages.add(str(info.value))
    assert messages == {f"{env}:4: extends cycle of 2 profile(s): a -> b -> a (one profile of the cycle must not extend another)"}


def test_unknown_profile_among_many_lists_a_few(tmp_path: Path) -> None:
    env = tmp_path / "env.toml"
    env.write_text("".join(f'[prof{i}]\nexecutor = "local"\n' for i in range(1000)))
    with pytest.raises(EnvFileError) as info:
        load_env_profile("nope", load_env_file(env))
    assert str(info.value).endswith("... (980 more))")
    assert len(str(info.value)) < 600


def test_every_error_line_is_bounded() -> None:
    line = str(errors.ConfigError("x" * 1_000_000, path="f.yaml", line=3, hint="y" * 100_000))
    assert len(line) < errors.MAX_PROBLEM + errors.MAX_HINT + 100
    assert line.startswith("f.yaml:3: xxx") and "characters left out" in line and line.endswith("yyy)")
