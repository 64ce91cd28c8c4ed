"""executor = "local": nothing prepared; the dry run is the command line, a secret-looking
script argument redacted."""

from __future__ import annotations

from nemo_runspec.backends.local import LocalBackend


def test_the_dry_run_is_the_command_line(compile_hello) -> None:
    job = compile_hello("here", "--greeting", "--token=hf_localSECRET0123456789abcdef")
    backend = LocalBackend()
    prepared = backend.prepare(job)
    assert prepared is None
    dry = backend.render(job, prepared)
    assert dry.scripts is None and dry.warnings == ()
    [line] = dry.commands
    assert "hello.py" in line and "--greeting" in line
    assert "hf_localSECRET0123456789abcdef" not in line and line.endswith("--greeting ***REDACTED***")


def test_without_a_profile_the_job_is_local(compile_hello) -> None:
    from nemo_runspec.backends import backend_for

    assert isinstance(backend_for(compile_hello(None)), LocalBackend)
