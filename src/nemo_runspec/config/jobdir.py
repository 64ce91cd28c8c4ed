"""Job directories: unique names, atomic creation, redacted config files.

A job dir is ``<jobs_dir>/<recipe-slug>/<YYYYmmdd-HHMMSS>-<8 hex>``. The random
part has 32 bits and a process never hands out the same name twice, so many
submissions in the same second (threads or processes) do not collide.

:func:`staged_job_dir` builds the directory under a hidden sibling name and
renames it into place only when everything inside was written, so a failure
never leaves a half-written job dir behind.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import secrets
import shutil
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from nemo_runspec.errors import ExecutionError
from nemo_runspec.secrets import (
    find_secret_values,
    is_reference,
    is_secret_name,
    redact,
    redact_text,
)

_ISSUED: set[str] = set()
_ISSUED_LOCK = threading.Lock()
_SLUG = re.compile(r"[^a-z0-9._-]+")


def slugify(name: str) -> str:
    """``nano3/pretrain`` -> ``nano3-pretrain`` (lowercase, safe for a directory name)."""
    slug = _SLUG.sub("-", name.lower()).strip("-.")
    return slug or "job"


def generate_job_dir(recipe_name: str, base_dir: str | os.PathLike[str] | None = None) -> Path:
    """A fresh, not yet created job dir path for ``recipe_name``.

    ``base_dir`` defaults to :func:`nemo_runspec.paths.jobs_dir`
    (``$NEMOTRON_HOME/jobs``).
    """
    if base_dir is None:
        from nemo_runspec.paths import jobs_dir

        base_dir = jobs_dir()
    parent = Path(base_dir).expanduser() / slugify(recipe_name)
    while True:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        candidate = parent / f"{stamp}-{secrets.token_hex(4)}"
        key = str(candidate)
        with _ISSUED_LOCK:
            if key in _ISSUED or candidate.exists():
                continue
            _ISSUED.add(key)
        return candidate


def _rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``, failing if ``dst`` exists (even as an empty dir)."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        renameat2 = None
    if renameat2 is not None:
        at_fdcwd, rename_noreplace = -100, 1
        rc = renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), rename_noreplace)
        if rc == 0:
            return
        err = ctypes.get_errno()
        if err not in (22, 38, 95):  # EINVAL/ENOSYS/EOPNOTSUPP: fall back below
            raise OSError(err, os.strerror(err), str(dst))
    if dst.exists():
        raise FileExistsError(17, os.strerror(17), str(dst))
    os.rename(src, dst)


@contextlib.contextmanager
def staged_job_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Create job dir ``path`` atomically.

    Yields a hidden temporary sibling directory to fill in. When the block ends
    without an exception, the temporary dir is renamed to ``path`` (an
    :class:`~nemo_runspec.errors.ExecutionError` if ``path`` already exists);
    on any exception it is removed and the exception re-raised. A directory
    that cannot be created or written (read-only ``$NEMOTRON_HOME``, full
    disk) is a :class:`~nemo_runspec.errors.LocalPathError` naming it (a full disk:
    :class:`~nemo_runspec.errors.DiskFullError`, naming the file system too).
    """
    from nemo_runspec.paths import ensure_dir, path_error

    final = Path(path).expanduser()
    if final.exists():
        raise ExecutionError("job directory already exists", path=final)
    ensure_dir(final.parent, action="create the job directory")
    tmp = final.parent / f".{final.name}.staging-{secrets.token_hex(4)}"
    try:
        tmp.mkdir()
    except OSError as exc:
        raise path_error(exc, final.parent, "create the job directory") from exc
    try:
        try:
            yield tmp
        except OSError as exc:  # writing the job's files into it (disk full, ...)
            if exc.filename is not None and not str(exc.filename).startswith(str(tmp)):
                raise  # (a failed write() names no file: it was one of the job's files)
            raise path_error(exc, final, "write the job directory", shown=final) from exc
        try:
            _rename_noreplace(tmp, final)
        except FileExistsError as exc:
            raise ExecutionError("job directory already exists", path=final) from exc
        except OSError as exc:
            if exc.errno in (17, 39):  # EEXIST, ENOTEMPTY
                raise ExecutionError("job directory already exists", path=final) from exc
            raise path_error(exc, final, "create the job directory", shown=final) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str, *, fsync: bool = True) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same dir and ``os.replace``
    (``fsync``: flushed to disk first; the rename alone already hides a half-written file)."""
    target = Path(path)
    tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not exc.filename:  # a failed write() names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
        raise
    return target


def redact_config(obj: object, values: Iterable[str] = (), allow: Iterable[str] = ()) -> Any:
    """:func:`nemo_runspec.secrets.redact` that keeps references like ``${oc.env:HF_TOKEN}``.

    ``run.env_sources`` holds labels, not values: only known secret values are
    masked there (its keys, e.g. ``env_vars.HF_TOKEN``, look secret themselves).
    ``allow``: values declared not secret (``run.not_secret``), kept even when
    they look like credentials.
    """
    values = list(values)
    allow = list(allow)
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            if k == "env_sources" and isinstance(v, Mapping):
                out[k] = {sk: redact_text(str(sv), values, allow=allow) for sk, sv in v.items()}
            elif isinstance(k, str) and is_secret_name(k) and is_reference(v):
                out[k] = redact_text(v, values, allow=allow)
            elif isinstance(v, (Mapping, list, tuple)):
                out[k] = redact_config(v, values, allow)
            else:
                out[k] = redact({k: v}, extra_values=values, allow=allow)[k]
        return out
    if isinstance(obj, (list, tuple)):
        return [redact_config(v, values, allow) for v in obj]
    return redact(obj, extra_values=values, allow=allow)


def _to_yaml(cfg: DictConfig | Mapping[str, Any], values: list[str], allow: list[str]) -> str:
    data = OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else dict(cfg)
    return OmegaConf.to_yaml(OmegaConf.create(redact_config(data, values, allow)), resolve=False)


def render_configs(job_config: DictConfig, train_config: DictConfig) -> dict[str, str]:
    """``{"job.yaml": ..., "train.yaml": ...}``: the redacted YAML texts :func:`save_configs` writes.

    Values under secret-looking keys, and every such value wherever else it
    appears (argv, env var strings), become ``***REDACTED***``; interpolations
    stay unresolved (``${art:...}`` resolves on the cluster).
    """
    job_data = OmegaConf.to_container(job_config, resolve=False)
    train_data = OmegaConf.to_container(train_config, resolve=False)
    from nemo_runspec.config.job_config import not_secret_values

    values = find_secret_values(job_data, train_data)
    allow = not_secret_values(job_data)
    return {"job.yaml": _to_yaml(job_data, values, allow), "train.yaml": _to_yaml(train_data, values, allow)}


def save_configs(
    job_config: DictConfig, train_config: DictConfig, job_dir: str | os.PathLike[str]
) -> tuple[Path, Path]:
    """Write ``job.yaml`` and ``train.yaml`` (see :func:`render_configs`) into ``job_dir``.

    Returns their paths. Each file is written atomically.
    """
    d = Path(job_dir)
    d.mkdir(parents=True, exist_ok=True)
    texts = render_configs(job_config, train_config)
    job_path = atomic_write_text(d / "job.yaml", texts["job.yaml"])
    train_path = atomic_write_text(d / "train.yaml", texts["train.yaml"])
    return job_path, train_path
