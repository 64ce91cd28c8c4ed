"""The report as one self-contained HTML file.

The plots are Bokeh's (docs/reports.md says why Bokeh): ``bokeh.min.js`` and its
CSS are inlined (``bokeh.resources.INLINE``), the data is inside the page's
JSON, the tables are plain HTML from ``templates/report.html.j2``: the file
opens from disk, on a machine with no network, in any current browser, and can
be mailed or attached to a ticket as it is. Only the plotting part of BokehJS
is inlined (about 1.3 MB; its widgets and tables would add 0.7 MB), which with
:mod:`~nemo_runspec.report.downsample` keeps a 30,000-step, 3-attempt report
under 2 MB (``bench/bench_report.py``).
"""

from __future__ import annotations

import os
import re
import time
import urllib.parse
from pathlib import Path

from nemo_runspec.report import fmt
from nemo_runspec.report.model import JOB, PIPE, Report, final_loss, tokens_per_sec

_KIND_TEXT = {JOB: "job report", PIPE: "pipe report: one row per stage",
              "sweep": "sweep report: one row per point"}


def _file_url(path: str) -> str:
    """A link to a file on this machine (a Slurm job's files are where the cluster has them)."""
    return "file://" + urllib.parse.quote(os.path.abspath(path)) if path else "#"


def figures(report: Report) -> dict[str, object]:
    """``name -> Bokeh figure``: ``timeline``, then the curves (per job, or overlaid for a sweep)."""
    from nemo_runspec.report import plots

    out: dict[str, object] = {}
    timeline = plots.timeline_figure(report)
    if timeline is not None:
        out["timeline"] = timeline
    if report.kind == "sweep":
        for i, fig in enumerate(plots.sweep_figures(report)):
            out[f"sweep-{i}"] = fig
    for i, member in enumerate(report.members):
        if member.job is None:
            continue
        for j, fig in enumerate(plots.job_figures(i, member.job)):
            if report.kind != JOB:
                fig.title.text = f"{member.label}: {fig.title.text}"
            out[f"job-{i}-{j}"] = fig
    return out


def _requirement(package: str, distribution: str = "nemotron") -> str:
    """``package``'s requirement as ``distribution`` declares it (``bokeh<4,>=3.6``), else its name."""
    from importlib import metadata

    try:
        declared = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return package
    return next((r.split(";")[0].strip() for r in declared
                 if re.match(rf"{package}\s*([<>=!~;\[]|$)", r, re.I)), package)


def require_bokeh() -> None:
    """A one-line :class:`~nemo_runspec.errors.ExecutionError` naming what to install when Bokeh
    cannot be imported (it is a dependency, but a ``--no-deps`` install or a trimmed
    environment may lack it); ``--format json`` needs no Bokeh."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        from nemo_runspec.errors import ExecutionError

        raise ExecutionError("the HTML report needs Bokeh, which is not installed in this environment",
                             hint=f"pip install '{_requirement('bokeh')}', a dependency of nemotron; "
                                  "or --format json, which needs no Bokeh") from None


def render_html(report: Report) -> str:
    """The whole page (see the module docstring)."""
    import jinja2

    require_bokeh()
    from bokeh.embed import components

    # the BokehJS parts these figures need, inlined (what bokeh.embed.file_html uses): plots only
    from bokeh.embed.bundle import bundle_for_objs_and_resources
    from bokeh.resources import INLINE

    figs = figures(report)
    script, divs = components(figs) if figs else ("", {})
    bundle = bundle_for_objs_and_resources(list(figs.values()), INLINE) if figs else None
    env = jinja2.Environment(loader=jinja2.PackageLoader("nemo_runspec", "templates"),
                             autoescape=True, trim_blocks=False, lstrip_blocks=False)
    keys = sorted({k for m in report.members for k in m.overrides})
    return env.get_template("report.html.j2").render(
        report=report, kind_text=_KIND_TEXT.get(report.kind, report.kind), tz=time.strftime("%Z"),
        bokeh_js=bundle.scripts() if bundle else "", bokeh_css="", script=script, divs=divs,
        plot_names=[n for n in divs if n != "timeline"], override_keys=keys,
        fmt_time=fmt.when, fmt_span=fmt.span, fmt_num=fmt.number, file_url=_file_url,
        loss_of=lambda job: (final_loss(job) or (None, None))[1], tps_of=tokens_per_sec,
    )


def write_html(report: Report, path: str | os.PathLike[str]) -> Path:
    """Render ``report`` into ``path`` atomically (a reader never sees half a page)."""
    from nemo_runspec.config.jobdir import atomic_write_text
    from nemo_runspec.paths import ensure_dir, path_error

    target = Path(path).expanduser()
    ensure_dir(target.parent, action="write the report")
    html = render_html(report)
    try:
        return atomic_write_text(target, html)
    except OSError as exc:
        raise path_error(exc, target, "write the report") from exc
