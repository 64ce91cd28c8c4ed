"""The worked example of docs/dev/architecture.md ("Adding a recipe command") holds:
a new script with a runspec block, a copy of pretrain.py with three edits, and one
registration give a command with help panels, a local dry run and a Slurm dry run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """\
# /// script
# [tool.runspec]
# schema = "1"
# name = "nano3/distill"
#
# [tool.runspec.run]
# launch = "torchrun"
#
# [tool.runspec.config]
# dir = "./config"
# default = "default"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
import sys
print("distill", sys.argv[1:])
"""

DRIVER = """\
import sys
sys.path.insert(0, sys.argv[1])
import distill_cmd
from nemotron.cli.commands.nano3._typer_group import app
app.add_recipe_command(distill_cmd.distill, spec=distill_cmd.SPEC, name="distill",
                       rich_help_panel="Training stages")
from nemotron.cli.bin.nemotron import main
sys.exit(main(sys.argv[2:]))
"""


def _make_command(tmp: Path) -> Path:
    recipe = tmp / "recipes" / "stage3_distill"
    (recipe / "config").mkdir(parents=True)
    (recipe / "train.py").write_text(SCRIPT)
    (recipe / "config" / "default.yaml").write_text("student:\n  layers: 2\nteacher: big\n")
    (recipe / "config" / "tiny.yaml").write_text("defaults: [default]\nstudent:\n  layers: 1\n")
    source = (ROOT / "src/nemotron/cli/commands/nano3/pretrain.py").read_text()
    # the three edits the doc names: the script path, the function name, its docstring
    command = source.replace('RECIPES_DIR / "nano3/stage0_pretrain/train.py"', repr(str(recipe / "train.py")))
    command = command.replace("def pretrain(", "def distill(")
    head, _, rest = command.partition('    """Pretrain')
    _, _, body = rest.partition('    """\n')
    command = head + textwrap.indent(textwrap.dedent('''\
        """Distill a small student from a teacher (torchrun).

        Examples:
            nemotron nano3 distill -c tiny --dry-run
        Consumes:
            model: the teacher checkpoint
        Produces:
            model: the student checkpoint
        """
    '''), "    ") + body
    assert command.count("def distill(") == 1 and "Distill a small student" in command
    (tmp / "distill_cmd.py").write_text(command)
    return tmp


def _run(tmp: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp / "nhome"), HOME=str(tmp), COLUMNS="200")
    return subprocess.run([sys.executable, "-c", DRIVER, str(tmp), *argv], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=120)


def test_new_command_from_the_worked_example(tmp_path: Path) -> None:
    tmp = _make_command(tmp_path)
    (tmp / "env.toml").write_text('[dev]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\nnodes = 3\n')

    helped = _run(tmp, "nano3", "distill", "--help")
    assert helped.returncode == 0, helped.stderr
    for shown in ("Distill a small student", "tiny", "default", "dev", "nemotron nano3 distill -c tiny --dry-run"):
        assert shown in helped.stdout

    listed = _run(tmp, "nano3", "--help")
    assert listed.returncode == 0, listed.stderr
    assert "distill" in listed.stdout

    local = _run(tmp, "nano3", "distill", "-c", "tiny", "--dry-run", "teacher=huge")
    assert local.returncode == 0, local.stderr
    assert "layers: 1" in local.stdout and "teacher: huge" in local.stdout
    assert "Local command" in local.stdout and "train.py" in local.stdout

    slurm = _run(tmp, "nano3", "distill", "-c", "tiny", "--batch", "dev", "--dry-run")
    assert slurm.returncode == 0, slurm.stderr
    assert "#SBATCH --nodes=3" in slurm.stdout and "#SBATCH --partition=p" in slurm.stdout

    ran = _run(tmp, "nano3", "distill", "-c", "tiny", "--", "--flag")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "distill" in ran.stdout and "--flag" in ran.stdout
