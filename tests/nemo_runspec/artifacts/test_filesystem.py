"""`art://` as an fsspec protocol, reachable from plain fsspec."""

from __future__ import annotations


def test_plain_fsspec_open_finds_art_through_the_entry_point(tmp_path):
    """A user's own code opens art:// with fsspec alone: the protocol is registered by
    the package's `fsspec.specs` entry point, not by importing nemo_runspec first."""
    import subprocess
    import sys

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    payload = tmp_path / "payload"
    payload.mkdir()
    (payload / "f.txt").write_text("through fsspec\n")
    ArtifactRegistry(tmp_path / "reg").publish("demo", payload)
    code = ("import sys, fsspec\n"
            "assert 'nemo_runspec' not in sys.modules\n"
            "with fsspec.open('art://demo:latest/f.txt', 'rt') as f:\n"
            "    print(f.read(), end='')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "NEMOTRON_ARTIFACTS_ROOT": str(tmp_path / "reg")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "through fsspec\n"
