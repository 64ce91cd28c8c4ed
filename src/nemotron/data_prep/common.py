"""Shared plumbing for the three data-prep kinds: config access, planning, finishing."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ConfigError, ExecutionError

from .output import (
    DONE_DIR,
    Manifest,
    OutputLock,
    candidates,
    describe_holder,
    in_the_way,
    sweep_tmp,
)
from .paths import resolve_path
from .report import check_bad_fraction, format_bad_summary, merge_bad, named_os_error, write_json
from .sharding import Shard, plan_shards
from .sources import InputFile, expand_inputs, scan_input

if TYPE_CHECKING:
    from .schema import DataPrepSettings


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, resolved dict from a DictConfig or mapping (the ``run:`` section dropped)."""
    from omegaconf import DictConfig, OmegaConf  # a required dependency

    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    data = json.loads(json.dumps(dict(cfg), default=str))
    data.pop("run", None)
    return data


#: Config keys that do not change what the output holds (where it goes, how fast, what is checked).
_NOT_CONTENT = ("workers", "publish", "run", "output_dir", "name", "allow_empty", "min_records")


def config_hash(cfg: Mapping[str, Any]) -> str:
    """sha256 of the config minus keys that do not change the content (workers, publish, output location, checks)."""
    relevant = {k: v for k, v in cfg.items() if k not in _NOT_CONTENT}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()


def default_output_dir(name: str, key: str | None = None) -> str:
    """``$NEMOTRON_HOME/data/<name>[/<key>]`` (``NEMOTRON_HOME`` defaults to ``~/.nemotron``)."""
    from nemo_runspec.paths import nemotron_home

    home = str(nemotron_home())
    return os.path.join(home, "data", name, key) if key else os.path.join(home, "data", name)


def content_key(cfg: Mapping[str, Any], files: list[Any]) -> str:
    """12 hex digits naming what the output will contain: the config and the inputs.

    The default output dir carries it, so a published version's path is never
    overwritten by a run with another config or changed inputs (the same key
    means the same, byte-identical output). :func:`content_digest` is the full key.
    """
    return content_digest(cfg, files)[:12]


def content_digest(cfg: Mapping[str, Any], files: list[Any]) -> str:
    """sha256 of the config (minus where things live) and of every input's whole content."""
    inputs = sorted((_content_id(f)) for f in files)
    blob = json.dumps([config_hash(_without_locations(cfg)), inputs], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _content_id(f: Any) -> tuple[str, int, int, str]:
    """What a file holds, not where it is: name, size, records and the sha256 of its whole content.

    The hash is the scan's (:func:`~nemotron.data_prep.sources.scan_input`), made
    in the read that counts the records: no extra pass. A packaged job sees the
    same inputs under another path (``<job dir>/code/...``); keying on the path
    would give identical data a new directory and version.
    """
    digest = str(getattr(f, "digest", "") or f.mtime)
    return (str(f.url).rstrip("/").rsplit("/", 1)[-1], int(f.size), int(f.num_records), digest)


def _without_locations(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The config minus where the inputs live (their content is keyed instead).

    ``tokenizer.path`` stays: a ``pkg:`` or shared-filesystem path names the same
    tokenizer wherever the job runs.
    """
    c = dict(cfg)
    if isinstance(c.get("input"), Mapping):
        c["input"] = {k: v for k, v in c["input"].items() if k != "paths"}
    return c


@dataclass
class Plan:
    """Everything decided before any shard runs.

    ``cfg`` is the resolved config as written (what the content key hashes);
    ``settings`` the same config checked and typed by the stage's schema
    (:mod:`nemotron.data_prep.schema`), with the defaults of absent keys: the
    run code reads its settings from there.
    """

    kind: str
    cfg: dict[str, Any]
    settings: DataPrepSettings
    out_dir: Path
    files: list[InputFile]
    shards: list[Shard]
    workers: int | None
    t0: float = field(default_factory=time.perf_counter)
    key: str = ""
    manifest: Manifest | None = None
    lock: OutputLock | None = None
    #: The output dir holds a published version of this very key: nothing is written, it is published again.
    sealed: bool = False
    claimed: set[str] = field(default_factory=set)

    def __enter__(self) -> Plan:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Release the output dir's lock."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def settle(self, outputs: set[str]) -> list[str]:
        """The shards are done: ``outputs`` are this run's shard files. Delete what the manifest
        lists (an older run's shards and done-markers) that this run no longer has; return it."""
        assert self.manifest is not None
        fixed = candidates(self.kind, [])
        final = set(outputs) | fixed | {f"{DONE_DIR}/{s.name}.json" for s in self.shards}
        removed = []
        for rel in sorted((self.manifest.files | self.claimed) - final):
            p = self.out_dir / rel
            if p.is_file():
                p.unlink()
                removed.append(rel)
        self.manifest.files = {f for f in final if (self.out_dir / f).is_file() or f in fixed}
        self.manifest.save(self.out_dir)
        return removed

    def reuse(self, stream: Any = None) -> dict[str, Any]:
        """A sealed dir: check its files are all there and publish the recorded result again."""
        import sys

        from .publish import publish_output

        assert self.manifest is not None
        missing = sorted(f for f in self.manifest.files if not (self.out_dir / f).is_file())
        if missing:
            raise ExecutionError(f"published data-prep output is missing {missing[0]}"
                                 + (f" and {len(missing) - 1} more files" if len(missing) > 1 else ""),
                                 path=self.out_dir, key="output_dir",
                                 hint="a published version is never rewritten: choose another output_dir")
        summary = dict(self.manifest.summary or {})
        print(f"[{self.kind}] {self.out_dir} already holds this output (published as "
              f"{', '.join(self.manifest.published)}): nothing to do", file=stream or sys.stdout, flush=True)
        if self.settings.publish.name:
            publish_output(self.settings, self.out_dir, summary)
        return summary


def make_plan(cfg: Mapping[str, Any], kind: str, default_name: str, *, stream: Any = None) -> Plan:
    """Check the config of stage ``kind`` against its schema, resolve paths, scan inputs and cut shards;
    then take the output dir (its lock, and its manifest's checks: see :mod:`nemotron.data_prep.output`).

    Use the plan as a context manager: leaving it releases the lock.
    """
    from .validation import settings_for

    s = settings_for(cfg, kind)
    c = to_dict(cfg)
    urls = expand_inputs(s.input.paths, s.data_root)
    files = [scan_input(u, s.input.format) for u in urls]
    key = content_digest(c, files)
    out_dir = Path(resolve_path(s.output_dir or default_output_dir(s.name or default_name, key[:12])))
    shards = plan_shards(files, s.num_shards, s.sample)
    if not shards and not s.allow_empty:
        shown = ", ".join(f.url for f in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise ConfigError(f"the input has no records: {shown}", key="input.paths",
                          hint="check the input files, or set allow_empty: true to publish an empty dataset")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise named_os_error(exc, out_dir) from exc
    plan = Plan(kind=kind, cfg=c, settings=s, out_dir=out_dir, files=files, shards=shards, workers=s.workers,
                key=key)
    plan.lock = OutputLock(out_dir)
    killed = plan.lock.acquire()
    try:
        _take_output_dir(plan, killed, stream)
    except BaseException:
        plan.close()
        raise
    return plan


def _take_output_dir(plan: Plan, killed: str | None, stream: Any) -> None:
    import sys

    out = stream or sys.stdout
    if killed:
        print(f"[{plan.kind}] note: took over the lock of the previous data prep into {plan.out_dir} "
              f"({describe_holder(killed)}, gone): it was killed before it finished; its finished shards are kept",
              file=out, flush=True)
    man = Manifest.load(plan.out_dir, plan.kind)
    if man is not None and man.published:
        if man.key != plan.key:
            raise ConfigError(f"this directory holds published version(s) {', '.join(man.published)} of other "
                              "inputs or config; a published version is never rewritten", path=plan.out_dir,
                              key="output_dir", hint="choose another output_dir, or leave it unset: each "
                                                     "config and input then gets its own directory")
        plan.manifest, plan.sealed = man, True
        return
    blocking = in_the_way(plan.out_dir, plan.kind, man)
    if blocking:
        more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
        raise ConfigError(f"in the way: the data prep writes here but did not write this{more}",
                          path=plan.out_dir / blocking[0], key="output_dir",
                          hint="move it away, or choose another (new or empty) output_dir")
    sweep_tmp(plan.out_dir, plan.kind)
    man = man or Manifest(kind=plan.kind)
    plan.claimed = candidates(plan.kind, [s.name for s in plan.shards])
    # before writing any of them: a killed run must not leave files the next run cannot tell are its own
    man.files |= plan.claimed
    man.key, man.complete, man.summary = plan.key, False, None
    man.save(plan.out_dir)
    plan.manifest = man


def check_not_empty(plan: Plan, kept: int, train: int, report_path: Path) -> None:
    """Fail on an empty or near-empty result unless ``allow_empty`` (see docs/data-prep.md)."""
    s = plan.settings
    if s.allow_empty:
        return
    if kept < s.min_records:
        what = "no record" if kept == 0 else f"only {kept} record{'s' if kept != 1 else ''}"
        raise ExecutionError(f"{what} made it into the output (min_records {s.min_records}); see {report_path}",
                             key="min_records", hint="check the inputs and the bad records in the report, or set "
                                                     "allow_empty: true to publish it anyway")
    if train == 0:
        raise ExecutionError(f"the train split is empty ({kept} records in the other splits); see {report_path}",
                             key="split", hint="add records or change split, or set allow_empty: true")


def finish(plan: Plan, results: list[dict], summary: dict[str, Any], *, stream: Any = None,
           kept: int, train: int) -> dict[str, Any]:
    """Write report.json, print the summary, enforce ``max_bad_fraction`` and the empty-result rule,
    then seal the manifest and publish. ``kept`` is how many records made it into the output,
    ``train`` how many of them are in the train split."""
    import sys

    stream = stream or sys.stdout
    records = sum(int(r.get("records", 0)) for r in results)
    bad = merge_bad([r.get("bad", {}) for r in results])
    report = {
        "kind": plan.kind,
        "records": records,
        "blank_lines": sum(int(r.get("blank_lines", 0)) for r in results),
        "bad": bad,
        "bad_fraction": round(bad["total"] / records, 6) if records else 0.0,
        "max_bad_fraction": plan.settings.max_bad_fraction,
        "shards": [
            {k: v for k, v in r.items() if k not in ("bad", "seconds", "outputs")} | {"shard": i}
            for i, r in enumerate(results)
        ],
    }
    report_path = plan.out_dir / "report.json"
    write_json(report_path, report)
    elapsed = time.perf_counter() - plan.t0
    summary = {**summary, "records": records, "bad_records": bad["total"], "output_dir": str(plan.out_dir)}
    tokens = int(summary.get("tokens", 0))
    print(f"[{plan.kind}] done in {elapsed:.1f}s: {records:,} records, {len(results)} shards"
          + (f", {tokens:,} tokens ({tokens / max(elapsed, 1e-9):,.0f} tok/s)" if tokens else ""), file=stream)
    for line in format_bad_summary(bad, records):
        print(f"[{plan.kind}] {line}", file=stream)
    print(f"[{plan.kind}] output: {plan.out_dir}  (report: {report_path})", file=stream, flush=True)
    check_bad_fraction(records, bad["total"], plan.settings.max_bad_fraction, report_path=report_path)
    check_not_empty(plan, kept, train, report_path)
    from .publish import publish_output, will_publish

    assert plan.manifest is not None
    plan.manifest.complete, plan.manifest.summary = True, summary
    if will_publish(plan.settings):  # sealed before the registry points at it: never rewritten after
        plan.manifest.published = [*plan.manifest.published, str(plan.settings.publish.name)]
    plan.manifest.save(plan.out_dir)
    publish_output(plan.settings, plan.out_dir, summary)
    return summary
