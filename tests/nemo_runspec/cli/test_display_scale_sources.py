"""What a dry run shows of a scale cell (cli/display.py): the keys the cell set, with their source."""

from __future__ import annotations

from tests.nemo_runspec.scales.test_apply import _compile, _script


def test_the_dry_run_shows_the_keys_the_matrix_set_with_their_source(tmp_path):
    import io

    from rich.console import Console

    from nemo_runspec.cli.display import display_dry_run, dry_run_sections

    _script(tmp_path)
    job = _compile(tmp_path, "run.env.nodes=2")
    rows = dry_run_sections(job.job_config, job.train_config)["scale"]
    assert rows == [("(cell)", "h100 x 2 node(s) bf16", "scale matrix of train.py (scales[1])"),
                    ("model.tp", "4", "scale matrix of train.py (scales[1])")]
    out = io.StringIO()
    display_dry_run(job.job_config, job.train_config, console=Console(file=out, width=200))
    assert "config keys from the scale matrix" in out.getvalue()
    assert "│ model.tp │ 4" in out.getvalue()
    typed = _compile(tmp_path, "run.env.nodes=2", "model.tp=2")  # the command line's key is not the matrix's
    assert [r[0] for r in dry_run_sections(typed.job_config, typed.train_config)["scale"]] == ["(cell)"]
    untested = _compile(tmp_path, "run.env.nodes=3", allow=True)
    assert dry_run_sections(untested.job_config, untested.train_config)["scale"][0][1].startswith("none: outside")
    assert dry_run_sections(_compile(tmp_path, config="tiny").job_config, {})["scale"] == []
