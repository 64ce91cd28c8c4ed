"""Job, pipe and sweep reports: one self-contained HTML page (or JSON) from what the launcher recorded.

``nemotron report ID`` (docs/reports.md) is::

    report = build_report(["168"])          # nemo_runspec.report.build: collect
    html = render_html(report)              # nemo_runspec.report.page: the page (Bokeh, inlined)
    print(summary_lines(report))            # nemo_runspec.report.summary: the terminal lines

=========================  ===================================================
module                     holds
=========================  ===================================================
``report.model``           :class:`~.model.Report`, :class:`~.model.JobReport`, ... (stdlib only)
``report.build``           :func:`~.build.build_report`: references -> a report
``report.collect``         one job's report from its files, ``sacct`` and the ledger
``report.jobfiles``        a job dir's files, read with one command (here or over SSH)
``report.logparse``        training log lines -> metric points and events
``report.identity``        command line, profile, code hash, artifacts from ``job.yaml``
``report.downsample``      long curves thinned out for the page
``report.page``            the HTML page; ``report.plots``: its Bokeh figures
``report.summary``         the terminal summary
=========================  ===================================================

Only :mod:`~nemo_runspec.report.page` and :mod:`~nemo_runspec.report.plots` import
Bokeh, inside their functions: ``nemotron --help`` imports none of this.
"""
