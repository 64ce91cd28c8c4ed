"""Shared helpers for the packaging tests: real git repositories in tmp dirs."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent-home-for-git",
}


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` (fixed identity, no user config) and return stdout."""
    import os

    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, env=env,
        check=True, capture_output=True, text=True,
    ).stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A committed repo with a small project layout (src/proj package + recipe script)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    files = files if files is not None else {
        "src/proj/__init__.py": "VALUE = 1\n",
        "src/proj/util.py": "def f():\n    return 2\n",
        "src/proj/recipes/train.py": "import proj.util\nprint(proj.util.f())\n",
        "README.md": "readme\n",
        ".gitignore": "*.log\nbuild/\n",
    }
    for rel, text in files.items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "init")
    return path


def tar_contents(archive: str | Path) -> dict[str, bytes]:
    """{name: content} of the regular files in a .tar.gz (names without leading './')."""
    out = {}
    with tarfile.open(archive, "r:gz") as t:
        for m in t:
            if m.isfile():
                out[m.name.removeprefix("./")] = t.extractfile(m).read()
    return out
