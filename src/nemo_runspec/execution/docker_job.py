"""Start a prepared Docker job with nemo-run's own Docker scheduler objects, and follow it.

``PersistentDockerScheduler._submit_dryrun`` builds nemo-run's ``DockerJobRequest``
(one ``DockerContainer``); ``schedule`` packages the code into the job dir and
calls the docker SDK's ``containers.run`` (detached, removed when it ends, the
job dir mounted at ``/nemo_run``). The container tees the script's output into
``<job dir>/log_<container>.out`` and writes its exit code into
``status_<container>.out``: ``--run`` follows the first and exits with the
second. The engine is whatever ``DOCKER_HOST`` (or the default socket) names.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution.backend_job import SEEN, TASK_SCRIPT, BackendJob, write_job_dir


def docker_request(prepared: BackendJob) -> Any:
    """nemo-run's ``DockerJobRequest`` for the job (assigns the executor; writes nothing)."""
    from torchx.specs import AppDef, Role

    from nemo_runspec._nemo_run import lean

    lean()
    from nemo_run.run.torchx_backend.schedulers.docker import PersistentDockerScheduler

    executor = prepared.executor
    executor.assign(prepared.exp_id, str(prepared.exp_dir), prepared.name, prepared.name)
    role = Role(name=prepared.name, image=prepared.image or "", entrypoint="bash",
                args=[f"{SEEN}/{TASK_SCRIPT}"])
    scheduler = PersistentDockerScheduler(session_name="nemotron")
    return scheduler, scheduler._submit_dryrun(AppDef(name=prepared.name, roles=[role]), executor)


def submit_docker(prepared: BackendJob, *, poll: float = 0.5) -> int:
    """Start the container; ``--batch`` returns 0 at once, ``--run`` the script's exit code."""
    scheduler, info = docker_request(prepared)
    container = info.request.containers[0].name
    write_job_dir(prepared)
    try:
        scheduler.schedule(info)
    except Exception as exc:  # the docker SDK's errors: no engine, no image, a refused option
        from nemo_runspec.execution.secret_file import SECRET_FILE_NAME

        (prepared.job_dir / SECRET_FILE_NAME).unlink(missing_ok=True)
        raise ExecutionError(f"docker could not start {container}: {_one_line(exc)}",
                             hint="is the engine running and DOCKER_HOST set? (scripts/docker-engine.sh)") from None
    log = prepared.job_dir / f"log_{container}.out"
    status = prepared.job_dir / f"status_{container}.out"
    print(f"container: {container}\njob dir: {prepared.job_dir}\nlog: {log}\n"
          f"follow: docker logs -f {container}\ncancel: docker rm -f {container}", file=sys.stderr)
    try:
        if prepared.mode == "batch":
            return 0
        code = follow(log, status, container=container, poll=poll)
        say_ending(container, code, log, secrets=list(prepared.secrets.values()))
        return code
    finally:
        # nemo-run's scheduler removes every container it started when it is garbage-collected
        # (close()/__del__): a --batch job must outlive this process, a finished one is gone already
        scheduler._scheduled_reqs.clear()


def follow(log: Path, status: Path, *, container: str, poll: float = 0.5) -> int:
    """Print ``log`` as it grows until ``status`` appears; its exit code (1 if the container vanished)."""
    from nemo_run.core.execution.docker import get_client

    client = get_client()
    offset, missing_since = 0, None
    while True:
        offset = _print_new(log, offset)
        if status.exists():
            time.sleep(poll)  # tee may still be writing the last lines
            _print_new(log, offset)
            return int(json.loads(status.read_text())["exit_code"])
        gone = not client.containers.list(all=True, filters={"name": container})
        if gone:
            missing_since = missing_since or time.monotonic()
            if time.monotonic() - missing_since > 5:
                print(f"error: container {container} ended without writing its exit status", file=sys.stderr)
                return 1
        time.sleep(poll)


def say_ending(container: str, code: int, log: Path, *, secrets: list[str]) -> None:
    """After the container's log, on stderr: how the job ended (:mod:`nemo_runspec.runtime.ended`),
    its outcome line first, then ``job CONTAINER: STATE (exit code N)``, then the log."""
    from nemo_runspec.runtime.ended import of_output, read_file_tail, summary_lines

    ending = of_output(container, code, read_file_tail(log), log_path=str(log))
    for line in summary_lines(ending, secrets=secrets):
        print(line, file=sys.stderr, flush=True)


def _print_new(path: Path, offset: int) -> int:
    if not path.exists():
        return offset
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read()
    if data:
        sys.stdout.write(data.decode(errors="replace"))
        sys.stdout.flush()
    return offset + len(data)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
