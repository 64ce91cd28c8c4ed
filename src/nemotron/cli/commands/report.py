"""``nemotron report ID...``: one self-contained HTML page of a job, a pipe or a set of jobs.

The page (:mod:`nemo_runspec.report`, docs/reports.md) is written to
``$NEMOTRON_HOME/reports/<kind>-<id>.html`` unless ``-o`` says where; its path is
printed on stdout (one line, for scripts), a short summary on stderr.
``--format json`` prints the same data as JSON on stdout instead.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from nemo_runspec.errors import CLIUsageError
from nemotron.cli.commands.nano3.data.import_._common import PlainParamsCommand

HELP = ("Write one self-contained HTML report of a job, a pipe or several jobs (a sweep): loss and "
        "throughput per attempt, the timeline, the job's identity.")
FORMATS = ("html", "json")

_app = typer.Typer(name="report", help=HELP, add_completion=False,
                   context_settings={"help_option_names": ["-h", "--help"]})


def default_path(kind: str, report_id: str) -> Path:
    """``$NEMOTRON_HOME/reports/<kind>-<id>.html`` (the id made safe for a file name)."""
    from nemo_runspec.paths import nemotron_home

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", report_id).strip("._")[:120] or "report"
    return nemotron_home() / "reports" / f"{kind}-{safe}.html"


def open_in_browser(path: Path) -> bool:
    """Open ``path`` in this machine's browser; False (and a warning) when there is none."""
    import webbrowser

    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        typer.echo(f"warning: no browser found here; open {path} where there is one", err=True)
        return False
    return bool(browser.open(path.absolute().as_uri()))


@_app.command("report", cls=PlainParamsCommand)
def report(
    refs: Annotated[list[str], typer.Argument(
        metavar="ID...", show_default=False,
        help="A job id or name, a pipe id (as `nemotron jobs list` shows them), or a job dir; "
             "several: a sweep report with one point per job.")],
    output: Annotated[str | None, typer.Option(
        "-o", "--output", metavar="PATH", show_default=False,
        help="Where to write it (default $NEMOTRON_HOME/reports/<kind>-<id>.html; with --format json "
             "the JSON goes there instead of stdout).")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="html or json.")] = "html",
    open_: Annotated[bool, typer.Option("--open", help="Open the page in a browser, where there is one.")] = False,
) -> None:
    """Write one self-contained HTML report of a job, a pipe or several jobs (a sweep): loss and throughput per attempt, the timeline, the job's identity.

    The page needs no network (the plotting library is inside it): loss (train and eval) and tokens/s against step with one line per attempt and requeues marked, a timeline (queued, attempts, checkpoints, the end; a row per pipe stage or sweep point) and the job's identity (command line, profile and where each setting came from, image, packaged code, artifacts, logs, .nsys-rep profiles). A job still running gives what exists so far. The path is printed on stdout, a summary on stderr.

    Examples:
        nemotron report 168
        nemotron report nano3-pipe-20250601-100000-a1b2 --open
        nemotron report 170 171 172 -o sweep.html
        nemotron report ~/.nemotron/jobs/nano3-pretrain/20250601-100000-1a2b3c4d
        nemotron report 168 --format json | jq '.members[0].job.state'
    """
    from nemo_runspec.report.build import build_report
    from nemo_runspec.report.summary import summary_lines

    if fmt not in FORMATS:
        from nemo_runspec._suggest import did_you_mean

        raise CLIUsageError(f"unknown --format {fmt!r}", hint=did_you_mean(fmt, FORMATS) or "html or json")
    if open_ and fmt != "html":
        raise CLIUsageError("--open shows the HTML page", hint="drop --format json, or --open")
    if fmt == "html":
        from nemo_runspec.report.page import require_bokeh

        require_bokeh()  # before asking any cluster
    built = build_report(refs)
    if fmt == "json":
        text = json.dumps(built.to_json(), indent=1, sort_keys=False)
        if output:
            from nemo_runspec.config.jobdir import atomic_write_text
            from nemo_runspec.paths import ensure_dir

            target = Path(output).expanduser()
            ensure_dir(target.parent, action="write the report")
            atomic_write_text(target, text + "\n")
            sys.stdout.write(f"{target}\n")
        else:
            sys.stdout.write(text + "\n")
        return
    from nemo_runspec.report.page import write_html

    path = write_html(built, Path(output) if output else default_path(built.kind, built.id))
    for line in summary_lines(built):
        typer.echo(line, err=True)
    typer.echo(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)", err=True)
    sys.stdout.write(f"{path}\n")
    sys.stdout.flush()
    if open_:
        open_in_browser(path)


#: ``nemotron report``: one command, not a group (``nemotron report ID``)
app = typer.main.get_command(_app)
app.rich_help_panel = None  # listed with the groups, in no panel of its own
