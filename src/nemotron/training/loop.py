"""The fallback training loop: AdamW + DDP over ``torch.distributed`` (gloo on CPU, NCCL on GPUs).

A single process works without torchrun; under torchrun / Slurm the process
group is initialised from ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT``.
Every rank builds the same model from the same seed, reads its own slice of the
data (sample ``(step * world + rank) * micro_batch + j``), and rank 0 logs,
evaluates and writes checkpoints; training resumes from the newest checkpoint in
the checkpoint directory.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nemo_runspec.errors import ConfigError

from .checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from .nsys import Capture
from .resilience import Resilience


@dataclass
class Settings:
    """The ``fallback:`` section of a recipe config (defaults for keys left out)."""

    max_steps: int = 30
    micro_batch_size: int = 4
    seq_length: int | None = 64
    lr: float = 3e-3
    min_lr: float = 3e-4
    weight_decay: float = 0.01
    warmup_steps: int = 3
    clip_grad: float = 1.0
    log_interval: int = 5
    eval_interval: int = 0
    eval_batches: int = 2
    save_interval: int = 0
    keep_checkpoints: int = 2
    seed: int = 1234
    device: str = "auto"
    threads: int | None = None
    model: dict[str, int] = field(default_factory=lambda: {"n_layer": 2, "n_head": 2, "d_model": 64})
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, section: dict[str, Any] | None) -> Settings:
        """Build from the plain ``fallback`` dict; unknown keys are kept in :attr:`extra` for the task."""
        from .schema import fallback_settings

        fallback_settings(section)  # every key typed: one line naming key, value and type
        data = dict(section or {})
        data.pop("enabled", None)
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        kwargs = {k: v for k, v in data.items() if k in known and (v is not None or k == "seq_length")}
        s = cls(**kwargs)
        s.extra = {k: v for k, v in data.items() if k not in known}
        for name in ("max_steps", "micro_batch_size"):
            if int(getattr(s, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(s, name)}", key=f"fallback.{name}")
        if s.threads is not None and int(s.threads) < 1:
            raise ConfigError(f"threads must be >= 1 or null, got {s.threads}", key="fallback.threads")
        if s.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"unknown device {s.device!r}", key="fallback.device", hint="use auto, cpu or cuda")
        return s


class Task(Protocol):
    """What a stage provides to the loop."""

    name: str
    vocab_size: int
    seq_length: int

    def train_batch(self, indices: list[int]) -> dict[str, Any]:
        """Numpy arrays ``tokens``, ``targets`` and optionally ``loss_mask``, ``segment_ids``."""

    def eval_batches(self, micro_batch_size: int, n: int) -> list[dict[str, Any]]:
        """Fixed evaluation batches (may be empty)."""

    def final_report(self, model: Any, log: Callable[[str], None]) -> dict[str, Any]:
        """Extra end-of-run evaluation on rank 0 (e.g. RL greedy accuracy)."""


@dataclass
class Dist:
    """Process-group facts of this process."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: Any = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device: str = "auto", threads: int | None = None) -> Dist:
    """Init ``torch.distributed`` from the environment when ``WORLD_SIZE > 1``; pick the device.

    On the CPU each process uses ``threads`` intra-op threads (``fallback.threads``),
    by default the cores divided among the node's processes."""
    import torch

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() if device == "auto" else device == "cuda"
    if use_cuda and not torch.cuda.is_available():
        raise ConfigError("fallback.device is cuda but no GPU is visible", key="fallback.device")
    if use_cuda:
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
    else:
        dev = torch.device("cpu")
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
        torch.set_num_threads(int(threads) if threads else max(1, (os.cpu_count() or 1) // max(1, local_world)))
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend="nccl" if use_cuda else "gloo")
    return Dist(rank=rank, world=world, local_rank=local_rank, device=dev)


def param_digest(model: Any) -> str:
    """sha256 over every parameter's name and bytes (to compare ranks)."""
    h = hashlib.sha256()
    for name, p in model.state_dict().items():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def lr_at(step: int, s: Settings) -> float:
    """Linear warmup for ``warmup_steps``, then cosine decay to ``min_lr`` at ``max_steps``."""
    if step < s.warmup_steps:
        return s.lr * (step + 1) / s.warmup_steps
    span = max(1, s.max_steps - s.warmup_steps)
    frac = min(1.0, (step - s.warmup_steps) / span)
    return s.min_lr + 0.5 * (s.lr - s.min_lr) * (1 + math.cos(math.pi * frac))


def _to_tensors(batch: dict[str, Any], device: Any) -> dict[str, Any]:
    import torch

    return {k: torch.as_tensor(v, dtype=torch.long, device=device) for k, v in batch.items()}


def _loss(model: Any, b: dict[str, Any]) -> Any:
    from .tiny_gpt import masked_lm_loss

    logits = model(b["tokens"], b.get("segment_ids"))
    return masked_lm_loss(logits, b["targets"], b.get("loss_mask"))


def evaluate(model: Any, batches: list[dict[str, Any]], dist: Dist) -> float | None:
    """Mean loss over the eval batches, sharded over ranks and all-reduced."""
    import torch

    if not batches:
        return None
    model.eval()
    total = torch.zeros(2, dtype=torch.float64, device=dist.device)
    with torch.no_grad():
        for i in range(dist.rank, len(batches), dist.world):
            total[0] += float(_loss(model, _to_tensors(batches[i], dist.device)))
            total[1] += 1
    if dist.world > 1:
        torch.distributed.all_reduce(total)
    model.train()
    return float(total[0] / total[1]) if total[1] else None


def _log(msg: str) -> None:
    print(msg, flush=True)


def init_from_checkpoint(model: Any, directory: str | os.PathLike[str], *,
                         key: str = "checkpoint.pretrained_checkpoint") -> tuple[Path, int]:
    """Load the latest checkpoint in ``directory`` into ``model`` (weights only).

    Every tensor must match in shape, except the learned position table, whose
    overlapping rows are copied (a previous stage may use shorter sequences).
    Returns the checkpoint's path and step; a missing or incompatible checkpoint
    is a ConfigError naming what differs and ``key``, the config key that named it.
    """
    import torch

    latest = latest_checkpoint(directory)
    if latest is None:
        raise ConfigError(f"no checkpoint in {directory}", key=key,
                          hint="run the previous stage first, or unset it to train from scratch")
    checkpoint = load_checkpoint(latest)
    state = checkpoint["model"]
    own = model.state_dict()
    for name, tensor in own.items():
        src = state.get(name)
        if src is None:
            raise ConfigError(f"checkpoint {latest} has no {name}", key=key,
                              hint="the previous stage used another fallback.model")
        if src.shape == tensor.shape:
            own[name] = src
        elif name == "pos.weight" and src.shape[1:] == tensor.shape[1:]:
            rows = min(src.shape[0], tensor.shape[0])
            merged = tensor.clone()
            merged[:rows] = src[:rows]
            own[name] = merged
        else:
            raise ConfigError(f"checkpoint {latest}: {name} has shape {tuple(src.shape)}, this model "
                              f"needs {tuple(tensor.shape)}", key=key,
                              hint="use the same fallback.model (and tokenizer) as the previous stage")
    with torch.no_grad():
        model.load_state_dict(own)
    return latest, int(checkpoint.get("step", 0))


def train(task: Task, s: Settings, checkpoint_dir: str | os.PathLike[str] | None, dist: Dist,
          *, log: Callable[[str], None] = _log, init_from: str | None = None,
          init_key: str = "checkpoint.pretrained_checkpoint",
          metrics: Callable[[int, dict[str, float]], None] | None = None) -> dict[str, Any]:
    """Train ``task`` for ``s.max_steps`` steps (resuming from ``checkpoint_dir``); return the summary.

    Rank 0 prints ``step``/``eval`` lines, ``initial loss`` and the final
    ``final loss ... | steps ... | tokens ... | ... s`` line; every rank prints
    ``rank R param sha256 ...`` at the end. ``metrics(step, values)`` (rank 0)
    gets the values of each printed line: ``train/loss``, ``train/lr``,
    ``train/tokens_per_sec`` with a ``step`` line, ``eval/loss`` with an eval line.

    ``init_from`` (a checkpoint dir of the previous stage, named by the config key
    ``init_key``) gives the starting weights; every checkpoint written records it
    (``init_from: {checkpoint, step}``, kept across resumes), so the evaluation can
    walk a model back through the chain that made it.
    """
    report = metrics if (metrics is not None and dist.is_main) else (lambda _step, _values: None)
    import torch

    from .tiny_gpt import GPTConfig, TinyGPT

    main = dist.is_main
    say = log if main else (lambda _msg: None)
    res = Resilience.from_env(dist.rank)
    res.beat(0, "init")
    capture = Capture(dist.rank, cuda=getattr(dist.device, "type", "cpu") == "cuda")  # run.profile.nsys
    mcfg = GPTConfig(vocab_size=task.vocab_size, seq_length=task.seq_length,
                     **{k: int(v) for k, v in s.model.items() if k in ("n_layer", "n_head", "d_model")})
    torch.manual_seed(s.seed)
    try:
        model = TinyGPT(mcfg).to(dist.device)
    except ValueError as exc:
        raise ConfigError(str(exc), key="fallback.model") from None
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": s.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=s.lr, betas=(0.9, 0.95))
    start, tokens_done = 0, 0
    origin: dict[str, Any] | None = None  # the previous stage's checkpoint these weights started from
    ckpt_dir = Path(checkpoint_dir) if checkpoint_dir else None
    if ckpt_dir is not None and (latest := latest_checkpoint(ckpt_dir)) is not None:
        state = load_checkpoint(latest)
        if state.get("task", task.name) != task.name:
            raise ConfigError(f"checkpoint {latest} was written by the {state.get('task')} stage, not {task.name}",
                              key="checkpoint.save", hint="give each stage its own checkpoint dir")
        if state.get("model_config") != mcfg.to_dict():
            raise ConfigError(f"checkpoint {latest} is for model {state.get('model_config')}, not {mcfg.to_dict()}",
                              key="checkpoint.save", hint="use another checkpoint.save dir or the same fallback.model")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start, tokens_done = int(state["step"]), int(state.get("tokens", 0))
        origin = state.get("init_from")
        say(f"[{task.name}] resumed from {latest} at step {start}")
    elif init_from:
        src, src_step = init_from_checkpoint(model, init_from, key=init_key)
        origin = {"checkpoint": str(src), "step": src_step}
        say(f"[{task.name}] initialized from {src} (step {src_step} of the previous stage)")
    ddp = model
    if dist.world > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dist.local_rank] if dist.device.type == "cuda" else None)
    n_params = sum(p.numel() for p in model.parameters())
    say(f"[{task.name}] tiny GPT {mcfg.n_layer}x{mcfg.d_model} ({mcfg.n_head} heads), vocab {mcfg.vocab_size}, "
        f"seq {mcfg.seq_length}, {n_params:,} params | world {dist.world} on {dist.device.type} | "
        f"steps {start}->{s.max_steps}, micro batch {s.micro_batch_size}")
    eval_set = task.eval_batches(s.micro_batch_size, s.eval_batches) if s.eval_interval or s.eval_batches else []

    def save(step: int) -> None:
        res.beat(step, "save")
        if ckpt_dir is not None and main:
            path = save_checkpoint(ckpt_dir, {"step": step, "task": task.name, "tokens": tokens_done, "model": model.state_dict(),
                                              "optimizer": opt.state_dict(), "model_config": mcfg.to_dict(),
                                              "init_from": origin},
                                   step, keep=s.keep_checkpoints)
            say(f"[{task.name}] saved checkpoint {path}")
        if dist.world > 1:
            torch.distributed.barrier()

    t0 = time.perf_counter()
    window_t, window_tokens = t0, 0
    recent: list[float] = []
    initial = None
    for step in range(start, s.max_steps):
        res.before_step(step + 1, first=step == start)
        capture.before(step + 1)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, s)
        idx = [(step * dist.world + dist.rank) * s.micro_batch_size + j for j in range(s.micro_batch_size)]
        batch = _to_tensors(task.train_batch(idx), dist.device)
        loss = _loss(ddp, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if s.clip_grad:
            torch.nn.utils.clip_grad_norm_(model.parameters(), s.clip_grad)
        opt.step()
        # the loss and this rank's stop request in one all-reduce: every rank stops after the same step
        reduced = torch.stack([loss.detach().double(),
                               torch.tensor(res.stop_code(), dtype=torch.float64, device=loss.device)])
        if dist.world > 1:
            torch.distributed.all_reduce(reduced)
            reduced[0] /= dist.world
        value, stop = float(reduced[0]), float(reduced[1])
        if not math.isfinite(value):
            raise FloatingPointError(f"loss is {value} at step {step + 1}")
        step_tokens = int(batch["tokens"].numel()) * dist.world
        tokens_done += step_tokens
        window_tokens += step_tokens
        recent = (recent + [value])[-max(1, s.log_interval):]
        if initial is None:
            initial = value
            say(f"[{task.name}] initial loss {value:.4f}")
        done = step + 1
        capture.after(done)
        res.log_step(done, value)
        if s.log_interval and (done % s.log_interval == 0 or done == s.max_steps):
            now = time.perf_counter()
            lr, tps = float(opt.param_groups[0]["lr"]), window_tokens / max(now - window_t, 1e-9)
            say(f"[{task.name}] step {done}/{s.max_steps} | loss {value:.4f} | lr {lr:.2e} | {tps:,.0f} tok/s")
            report(done, {"train/loss": value, "train/lr": lr, "train/tokens_per_sec": tps})
            window_t, window_tokens = now, 0
        if s.eval_interval and done % s.eval_interval == 0 and done != s.max_steps:
            res.beat(done, "eval")
            ev = evaluate(model, eval_set, dist)
            if ev is not None:
                say(f"[{task.name}] eval loss {ev:.4f} at step {done}")
                report(done, {"eval/loss": ev})
        if s.save_interval and done % s.save_interval == 0 and done != s.max_steps:
            save(done)
        if stop and done != s.max_steps:  # Slurm's warning or SIGTERM: checkpoint, stop, be requeued
            if not (s.save_interval and done % s.save_interval == 0):
                save(done)
            res.stopped(done, stop)
            line = f"[{task.name}] stopped after step {done} to be requeued (checkpoint saved)"
            say(line)
            return {"steps": done, "steps_run": done - start, "tokens": tokens_done, "stopped": done,
                    "seconds": time.perf_counter() - t0, "initial_loss": initial,
                    "final_loss": None, "eval_loss": None, "line": line}
    ran = max(0, s.max_steps - start)
    res.beat(max(start, s.max_steps), "eval")
    final_eval = evaluate(model, eval_set, dist)
    if ran:
        save(s.max_steps)
    elapsed = time.perf_counter() - t0
    summary: dict[str, Any] = {"steps": max(start, s.max_steps), "steps_run": ran, "tokens": tokens_done,
                               "seconds": elapsed, "initial_loss": initial,
                               "final_loss": sum(recent) / len(recent) if recent else None,
                               "eval_loss": final_eval}
    if final_eval is not None:
        say(f"[{task.name}] final eval loss {final_eval:.4f}")
        report(max(start, s.max_steps), {"eval/loss": final_eval})
    if main:
        summary.update(task.final_report(model, say))
    if dist.world > 1:
        torch.distributed.barrier()
    res.close(max(start, s.max_steps))
    sys.stdout.write(f"[{task.name}] rank {dist.rank} param sha256 {param_digest(model)}\n")
    sys.stdout.flush()
    if dist.world > 1:  # every rank's line is out before rank 0's last one (docs/training.md, Output)
        torch.distributed.barrier()
    loss_text = f"{summary['final_loss']:.4f}" if summary["final_loss"] is not None else "n/a (nothing to train)"
    summary["line"] = (f"[{task.name}] final loss {loss_text} | steps {summary['steps']} | tokens {tokens_done} | "
                       f"{elapsed:.1f} s")
    say(summary["line"])
    return summary


def shutdown() -> None:
    """Destroy the process group if one was created."""
    try:
        import torch

        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    except Exception:  # noqa: BLE001 - best effort at exit
        print("warning: could not destroy the process group", file=sys.stderr)
