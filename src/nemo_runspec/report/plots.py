"""The page's Bokeh figures: curves against step, and the timeline.

Every data source is named, so the page can be checked (and scripted) in the
browser: ``Bokeh.documents[0].get_model_by_name(NAME).data``:

- ``series/<member>/<metric>/<attempt>``: ``step``, ``value`` of one curve (thinned
  out above :data:`~nemo_runspec.report.downsample.MAX_POINTS`);
- ``requeues/<member>``: ``step``, ``label`` of each attempt boundary (a requeue);
- ``timeline/bars``: ``row``, ``start``, ``end``, ``kind``, ``label`` (times in ms, local);
- ``timeline/events``: ``row``, ``t``, ``kind``, ``label``;
- ``timeline/deps`` (a pipe): ``from``, ``to`` (stage rows), ``x0`` (when ``from`` ended),
  ``x1`` (when ``to`` started, or now while it waits): one arrow per dependency.

Bokeh is imported inside the functions (``nemotron --help`` must not pay for it).
"""

from __future__ import annotations

import time
from typing import Any

from nemo_runspec.report.downsample import min_max
from nemo_runspec.report.model import (
    EVAL_LOSS,
    PIPE,
    SWEEP,
    TOKENS_PER_SEC,
    TRAIN_LOSS,
    JobReport,
    Member,
    Report,
)

WIDTH = 1000
#: colours: one per attempt (or sweep point)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
#: timeline bar colours by what the bar is
BAR_COLOURS = {"queued": "#c7c7c7", "start-up": "#dbdbdb", "completed": "#2ca02c", "COMPLETED": "#2ca02c", "running": "#1f77b4",
               "failed": "#d62728", "FAILED": "#d62728", "CANCELLED": "#7f7f7f", "cancelled": "#7f7f7f"}
EVENT_MARKERS = {"checkpoint": "triangle", "requeued": "x", "resumed": "circle", "stopped": "square",
                 "published": "diamond", "submitted": "inverted_triangle", "eligible": "dash",
                 "started": "circle_dot", "ended": "star"}


def _local_ms(t: float) -> float:
    """Unix seconds as Bokeh's milliseconds, shifted so the axis reads local time."""
    return (t - time.altzone if time.localtime(t).tm_isdst > 0 else t - time.timezone) * 1000.0


def _figure(title: str, y_label: str, **kw: Any) -> Any:
    from bokeh.plotting import figure

    fig = figure(title=title, width=WIDTH, height=320, x_axis_label=kw.pop("x_label", "step"),
                 y_axis_label=y_label, tools="pan,box_zoom,wheel_zoom,reset,save,hover",
                 output_backend="canvas", **kw)
    fig.toolbar.logo = None
    return fig


def _legend_outside(fig: Any) -> None:
    if fig.legend:
        fig.legend.click_policy = "hide"
        fig.legend.location = "top_right"


def _curve(fig: Any, name: str, series: Any, colour: str, label: str, *, dashed: bool = False,
           markers: bool = False) -> None:
    from bokeh.models import ColumnDataSource

    shown = min_max(series)
    source = ColumnDataSource({"step": shown.steps, "value": shown.values}, name=name)
    fig.line("step", "value", source=source, line_color=colour, line_width=2, legend_label=label,
             line_dash="dashed" if dashed else "solid")
    if markers:
        fig.scatter("step", "value", source=source, color=colour, size=6, legend_label=label)


def _requeues(fig: Any, index: int, job: JobReport) -> None:
    """A dashed vertical line where each requeued attempt stopped (the next one resumed after it)."""
    from bokeh.models import ColumnDataSource

    steps, labels = [], []
    for att in job.attempts:
        if not att.requeued:
            continue
        step = att.step
        if step is None:  # no record of the step: where its curve ends
            ends = [s.steps[-1] for s in job.series if s.attempt == att.number and s.steps]
            step = max(ends) if ends else None
        if step is not None:
            steps.append(step)
            labels.append(f"attempt {att.number}: {att.kind or 'requeued'}")
    if steps:
        source = ColumnDataSource({"step": steps, "label": labels}, name=f"requeues/{index}")
        fig.vspan(x="step", source=source, line_color="#d62728", line_dash="dashed", line_width=2,
                  legend_label="requeue")


def job_figures(index: int, job: JobReport) -> list[Any]:
    """Loss (train and eval) and throughput against step, one line per attempt."""
    figs = []
    loss = _figure(f"{job.name or job.id}: loss", "loss")
    drawn = False
    for s in job.metric(TRAIN_LOSS):
        _curve(loss, f"series/{index}/{TRAIN_LOSS}/{s.attempt}", s, PALETTE[s.attempt % 10],
               f"train, attempt {s.attempt}")
        drawn = True
    for s in job.metric(EVAL_LOSS):
        _curve(loss, f"series/{index}/{EVAL_LOSS}/{s.attempt}", s, PALETTE[s.attempt % 10],
               f"eval, attempt {s.attempt}", dashed=True, markers=True)
        drawn = True
    if drawn:
        _requeues(loss, index, job)
        _legend_outside(loss)
        figs.append(loss)
    tput = job.metric(TOKENS_PER_SEC)
    if tput:
        fig = _figure(f"{job.name or job.id}: throughput", "tokens/s")
        for s in tput:
            _curve(fig, f"series/{index}/{TOKENS_PER_SEC}/{s.attempt}", s, PALETTE[s.attempt % 10],
                   f"attempt {s.attempt}", markers=len(s.steps) < 200)
        _legend_outside(fig)
        figs.append(fig)
    return figs


def sweep_figures(report: Report) -> list[Any]:
    """Every point's loss and throughput overlaid (one colour per point; attempts joined)."""
    from nemo_runspec.report.model import Series

    figs = []
    for metric, title, y in ((TRAIN_LOSS, "train loss", "loss"), (EVAL_LOSS, "eval loss", "loss"),
                             (TOKENS_PER_SEC, "throughput", "tokens/s")):
        fig = _figure(f"{title}, every point", y)
        drawn = False
        for i, m in enumerate(report.members):
            if m.job is None or not m.job.metric(metric):
                continue
            joined = Series(metric, 0, source="")
            for s in m.job.metric(metric):
                for step, value, t in zip(s.steps, s.values, s.times, strict=True):
                    joined.add(step, value, t)
            best = " (best)" if report.best == i else ""
            _curve(fig, f"series/{i}/{metric}/all", joined, PALETTE[i % 10], f"{m.label}{best}",
                   dashed=metric == EVAL_LOSS, markers=metric == EVAL_LOSS)
            drawn = True
        if drawn:
            _legend_outside(fig)
            figs.append(fig)
    return figs


def _rows(report: Report) -> list[tuple[str, Member, list[Any]]]:
    """Timeline rows: per attempt for a job, per stage for a pipe, per point for a sweep."""
    rows = []
    for m in report.members:
        job = m.job
        if job is None:
            continue
        if report.kind == "job" and len(job.attempts) > 1:
            rows.extend((f"attempt {a.number}", m, [a]) for a in job.attempts)
        else:
            rows.append((m.label, m, list(job.attempts)))
    return rows


def timeline_figure(report: Report) -> Any | None:
    """Queued time, attempts (coloured by how they ended) and events, against local time."""
    from bokeh.models import ColumnDataSource, HoverTool

    rows = _rows(report)
    if not rows:
        return None
    names = [r[0] for r in reversed(rows)]
    bars: dict[str, list[Any]] = {"row": [], "start": [], "end": [], "kind": [], "label": [], "colour": []}
    events: dict[str, list[Any]] = {"row": [], "t": [], "kind": [], "label": [], "marker": [], "event": []}
    now = report.generated
    for row, member, attempts in rows:
        job = member.job
        assert job is not None
        first = attempts[0].start if attempts and attempts[0].start else job.started
        if job.submitted is not None and first is not None and first > job.submitted and \
                (report.kind != "job" or not attempts or attempts[0].number == 0):
            if job.where == "local":
                _bar(bars, row, job.submitted, first, "start-up", "start-up (job dir created to first line)")
            else:
                _bar(bars, row, job.submitted, first, "queued", "queued (submit to start)")
        elif job.submitted is not None and first is None and job.ended is None:
            _bar(bars, row, job.submitted, now, "queued", "queued (still waiting when the report was made)")
        for att in attempts:
            if att.start is None:
                continue
            kind = att.kind or "running"
            _bar(bars, row, att.start, att.end or now, kind,
                 f"attempt {att.number}: {att.reason or kind}" + (f" on {att.nodes}" if att.nodes else ""))
        numbers = {a.number for a in attempts}
        for ev in job.events:
            if ev.t is None or (report.kind == "job" and len(job.attempts) > 1 and ev.attempt not in numbers):
                continue
            if ev.kind in ("started",):
                continue
            events["row"].append(row)
            events["t"].append(_local_ms(ev.t))
            events["kind"].append(ev.kind)
            events["event"].append(ev.kind)
            events["label"].append(f"{ev.kind}" + (f" (step {ev.step})" if ev.step is not None else "")
                                   + (f": {ev.label}" if ev.label and ev.label != ev.kind else ""))
            events["marker"].append(EVENT_MARKERS.get(ev.kind, "circle"))
    fig = _figure("timeline" + (" (one row per stage; an arrow: waits for)" if report.kind == PIPE else
                                " (one row per point)" if report.kind == SWEEP else ""),
                  "", x_label=f"time ({time.strftime('%Z')})", x_axis_type="datetime", y_range=names)
    fig.height = max(300, 80 + 40 * len(names))  # room for the legend of bars and event markers
    bar_src = ColumnDataSource(bars, name="timeline/bars")
    fig.hbar(y="row", left="start", right="end", height=0.5, source=bar_src, fill_color="colour",
             line_color="colour", legend_field="kind")
    ev_src = ColumnDataSource(events, name="timeline/events")
    # its own legend column: two renderers with legend_field "kind" would share one legend item
    fig.scatter(x="t", y="row", source=ev_src, marker="marker", size=11, color="#222222", legend_field="event")
    hover = fig.select_one(HoverTool)
    hover.tooltips = [("", "@label")]
    fig.add_layout(fig.legend[0], "right")
    if report.kind == PIPE:
        _dependencies(fig, report)
    return fig


def _dependencies(fig: Any, report: Report) -> None:
    """An arrow from the end of each stage a pipe stage waits for to where that stage started."""
    from bokeh.models import Arrow, ColumnDataSource, VeeHead

    jobs = {m.label: m.job for m in report.members if m.job is not None}
    deps: dict[str, list[Any]] = {"from": [], "to": [], "x0": [], "x1": []}
    for member in report.members:
        job = member.job
        if job is None:
            continue
        starts = [a.start for a in job.attempts if a.start is not None]
        started = min(starts) if starts else job.started
        waiting = started is None and job.ended is None
        for name in member.depends_on:
            before = jobs.get(name)
            ended = None if before is None else (before.ended or max(
                (a.end for a in before.attempts if a.end is not None), default=None))
            if ended is None or (started is None and not waiting):
                continue  # a skipped stage (no row), one not ended yet, one that never started
            deps["from"].append(name)
            deps["to"].append(member.label)
            deps["x0"].append(_local_ms(ended))
            deps["x1"].append(_local_ms(report.generated if waiting else started))
    if deps["from"]:
        source = ColumnDataSource(deps, name="timeline/deps")
        fig.add_layout(Arrow(source=source, x_start="x0", y_start="from", x_end="x1", y_end="to",
                             line_color="#555555", line_width=1.5, line_dash="dotted",
                             end=VeeHead(size=9, fill_color="#555555", line_color="#555555")))


def _bar(bars: dict[str, list[Any]], row: str, start: float, end: float, kind: str, label: str) -> None:
    bars["row"].append(row)
    bars["start"].append(_local_ms(start))
    bars["end"].append(_local_ms(max(end, start)))
    bars["kind"].append(kind)
    bars["label"].append(label)
    bars["colour"].append(BAR_COLOURS.get(kind, "#ff7f0e" if kind != "running" else "#1f77b4"))
