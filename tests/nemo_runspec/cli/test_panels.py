"""nemo_runspec.cli.panels lays help pages out as rich does, without importing rich.

The reference is rich itself: the same blocks printed through ``rich.console.Console``
must give the same bytes (no colours) and the same character and style in every
cell (colours; rich splits styled runs differently, which a terminal does not show).
"""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from nemo_runspec.cli import panels as P

ROOT = Path(__file__).resolve().parents[3]


def rich_output(blocks, width: int, color: bool) -> str:
    buf = io.StringIO()
    console = Console(highlight=False, file=buf, width=width, force_terminal=color,
                      color_system="standard" if color else None, legacy_windows=False,
                      force_jupyter=False)
    for renderable in P.rich_renderables(blocks):
        console.print(renderable)
    return buf.getvalue()


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(text: str) -> list[list[tuple[str, frozenset[str] | None]]]:
    """Each line as (character, active SGR codes); the style of a space is not visible."""
    lines, active = [], frozenset()
    for line in text.split("\n"):
        row, pos = [], 0
        for match in _SGR.finditer(line):
            row += [(ch, None if ch == " " else active) for ch in line[pos:match.start()]]
            codes = match.group(1)
            active = frozenset() if codes in ("", "0") else frozenset(codes.split(";"))
            pos = match.end()
        row += [(ch, None if ch == " " else active) for ch in line[pos:]]
        lines.append(row)
    return lines


def assert_same(blocks, width: int) -> tuple[str, str]:
    plain = P.render(blocks, width, False)
    assert plain == rich_output(blocks, width, False), f"width {width}"
    colored, reference = P.render(blocks, width, True), rich_output(blocks, width, True)
    assert cells(colored) == cells(reference), f"width {width} (colours)"
    return colored, reference


WORDS = ["a", "to", "the", "config", "--flag", "run.env.KEY=value", "x" * 30, "y" * 17, "z" * 19,
         "/work/main/src/nemotron/recipes/nano3/stage0_pretrain/config", "(default)", "-c", "NAME|PATH",
         " ", "  ", "ab  cd"]


def _text(rng: random.Random, most: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, most)))
    if rng.random() < 0.1:
        text += "\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))
    if rng.random() < 0.05:
        text = f"  {text}   "
    return text


def _page(rng: random.Random) -> list:
    blocks = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.random()
        if kind < 0.3:
            blocks.append(P.Para(_text(rng, 15), rng.choice(["", "bold"]),
                                 rng.choice([(1, 1, 0, 1), (1, 1, 1, 1), (0, 0, 0, 0), (0, 3, 2, 4)])))
        elif kind < 0.4:
            blocks.append(P.Blank())
        else:
            columns = rng.choice([1, 2, 2, 2])
            rows = [[(_text(rng, 3 if i == 0 and columns == 2 else 20), rng.choice(["", "dim", "red", "green"]))
                     for i in range(columns)] for _ in range(rng.randint(1, 6))]
            blocks.append(P.Panel(rng.choice(["Commands", "Global options", "A much longer panel title here"]), rows))
    return blocks


@pytest.mark.parametrize("seed", range(6))
def test_generated_pages_match_rich(seed):
    rng = random.Random(seed)
    for _ in range(40):
        page = _page(rng)
        assert P.supported(page)
        for width in rng.sample(range(P.MIN_WIDTH, 220), 5):
            assert_same(page, width)


def test_the_cli_help_pages_match_rich(tmp_path, monkeypatch):
    """The real pages: root, a group, a recipe (with profiles, artifacts, examples)."""
    from nemo_runspec.cli.help import group_help_blocks, recipe_help_blocks
    from nemo_runspec.cli.meta import RecipeMeta
    from nemotron.cli.bin.nemotron import GROUPS, app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "env.toml").write_text('[dev]\nexecutor = "slurm"\n[laptop]\nexecutor = "local"\n')
    import typer

    from nemotron.cli.commands.nano3 import pretrain

    group = typer.main.get_command(app)

    class Ctx:
        command_path = "nemotron"
        help_option_names = ["-h", "--help"]

    rows = [(name, entry[3], None) for name, entry in GROUPS.items()]
    pages = [group_help_blocks(Ctx(), group.help or "", rows),
             recipe_help_blocks(RecipeMeta.from_spec(pretrain.SPEC, pretrain.pretrain.__doc__),
                                "nemotron nano3 pretrain")]
    for page in pages:
        assert P.supported(page)
        for width in (20, 33, 60, 79, 80, 81, 120, 200):
            colored, reference = assert_same(page, width)
            assert "\x1b[2m\u256d" in colored and "\x1b[1;36m" in reference  # the styles are compared


def test_what_rich_is_left_to():
    assert not P.supported([P.Para("caf\u00e9")])  # beyond ASCII: rich measures cells
    assert not P.supported([P.Panel("[bold]x[/bold]", [("a", "b")])])  # a markup title
    assert not P.supported([P.Panel("x", [("a", "b"), ("c",)])])  # rows of different lengths
    assert not P.supported([P.Para("x", "blink")])
    assert not P.supported([P.Para("tab\there")])


def test_print_blocks_falls_back_to_rich(monkeypatch):
    page = [P.Para("Usage: x", "bold"), P.Panel("Commands", [("a", "the a command")])]
    out = io.StringIO()
    monkeypatch.setenv("COLUMNS", "50")
    P.print_blocks(page, out)
    assert out.getvalue() == rich_output(page, 50, False)
    unicode_page = [P.Para("Usage: caf\u00e9 \u2014 x"), P.Panel("Commands", [("a", "\u65e5\u672c\u8a9e")])]
    out = io.StringIO()
    P.print_blocks(unicode_page, out)
    assert out.getvalue() == rich_output(unicode_page, 50, False)


# --------------------------------------------------------------------------- the console rich would use

PROBE = textwrap.dedent("""
    import json, os, sys
    from nemo_runspec.cli import panels
    mine = panels.terminal(sys.stdout)
    from rich.console import Console
    console = Console()
    rich = [console.width, console.color_system is not None]
    os.write(int(sys.argv[1]), json.dumps([mine, rich]).encode())
""")


def _probe(env: dict[str, str], tty: bool | str) -> tuple:
    """What panels.terminal and rich's Console say in a process whose stdin, stdout
    and stderr are a terminal (``tty`` True; "stdin": only stdin) or pipes."""
    import json

    read, write = os.pipe()
    base = {k: v for k, v in os.environ.items()
            if k not in ("COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    base.update(env)
    if tty:
        import pty

        master, slave = pty.openpty()
        if "ROWS_COLS" in env:
            import fcntl
            import struct
            import termios

            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, int(env["ROWS_COLS"]), 0, 0))
        stdio = {"stdin": slave, "stdout": slave, "stderr": slave}
        if tty == "stdin":  # `nemotron --help | less`
            stdio.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    else:
        stdio = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    proc = subprocess.Popen([sys.executable, "-c", PROBE, str(write)], env=base, pass_fds=(write,), **stdio)
    os.close(write)
    proc.wait(timeout=60)
    if tty:
        os.close(slave)
        os.close(master)
    data = os.read(read, 4096)
    os.close(read)
    assert proc.returncode == 0
    return tuple(json.loads(data))


@pytest.mark.parametrize("env, tty", [
    ({}, False),
    ({"COLUMNS": "132"}, False),
    ({"COLUMNS": "wide"}, False),
    ({"TERM": "xterm-256color"}, True),
    ({"TERM": "xterm", "ROWS_COLS": "97"}, True),
    ({"TERM": "xterm", "COLUMNS": "150", "ROWS_COLS": "97"}, True),
    ({"TERM": "xterm-256color", "COLORTERM": "truecolor", "ROWS_COLS": "61"}, True),
    ({"TERM": "xterm", "ROWS_COLS": "91"}, "stdin"),
])
def test_width_and_colours_are_rich_s(env, tty):
    mine, rich = _probe(env, tty)
    assert mine == rich


@pytest.mark.parametrize("env, tty", [
    ({"NO_COLOR": "1"}, True),
    ({"FORCE_COLOR": "1"}, False),
    ({"TTY_COMPATIBLE": "1"}, False),
    ({"TERM": "dumb"}, True),
    ({"COLUMNS": "12"}, False),
])
def test_unusual_consoles_are_left_to_rich(env, tty):
    mine, _ = _probe(env, tty)
    assert mine is None
