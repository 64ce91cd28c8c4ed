"""Recognise and redact secrets (keys, tokens, secrets, passwords).

One rule everywhere: an environment variable or config key whose *name* looks
like a credential is a secret, and its value never appears in anything we write
or display (sbatch scripts, logs, saved job configs, dry-run output).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***REDACTED***"

# Name fragments that mark a credential. Matched on word boundaries of
# snake/camel/kebab case so that e.g. "tokenizer" or "max_tokens" is NOT a secret.
_SECRET_WORDS = (
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "credential",
    "credentials", "auth", "pat", "passphrase", "private",
)
_NOT_SECRET_NAMES = {
    "tokenizer", "tokens", "max_tokens", "num_tokens", "key_path", "key_file", "keys",
    "sort_key", "cache_key", "primary_key", "public_key", "ssh_key_path",
}
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

# Values that look like credentials even under an innocent name.
_VALUE_PATTERNS = (
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),             # Hugging Face
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{20,}\b"),  # OpenAI-style
    re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}\b"),         # NVIDIA API
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),        # GitHub
    re.compile(r"\b[0-9a-f]{40}\b(?=.*wandb)", re.I),     # W&B key in a wandb context
)


def is_secret_name(name: str) -> bool:
    """True when ``name`` (env var or config key) looks like it holds a credential.

    >>> is_secret_name("HF_TOKEN"), is_secret_name("WANDB_API_KEY"), is_secret_name("tokenizer")
    (True, True, False)
    """
    if not name:
        return False
    lowered = name.lower()
    if lowered in _NOT_SECRET_NAMES:
        return False
    words = [w.lower() for w in _SPLIT.split(name) if w]
    if any(w in _NOT_SECRET_NAMES for w in words) and not any(
        w in ("token", "secret", "password", "apikey") for w in words
    ):
        return False
    return any(w in _SECRET_WORDS for w in words)


def redact(obj: Any, *, extra_values: Iterable[str] = ()) -> Any:
    """Return a copy of ``obj`` (nested dicts/lists/strings) with secrets replaced.

    Values under secret-looking keys become :data:`REDACTED`; any string that
    contains a known secret value (``extra_values``) or a credential-shaped
    token has that part replaced.
    """
    values = [v for v in extra_values if v and len(v) >= 4]
    return _redact(obj, values)


def _redact(obj: Any, values: list[str]) -> Any:
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str) and is_secret_name(k) and v not in (None, "", REDACTED):
                out[k] = REDACTED if not isinstance(v, (Mapping, list, tuple)) else _redact(v, values)
            else:
                out[k] = _redact(v, values)
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_redact(v, values) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj, values)
    return obj


def redact_text(text: str, values: Iterable[str] = ()) -> str:
    """Replace known secret ``values`` and credential-shaped tokens in ``text``.

    Also masks ``NAME=value`` / ``NAME: value`` pairs where NAME looks secret.
    """
    for v in sorted({v for v in values if v and len(v) >= 4}, key=len, reverse=True):
        text = text.replace(v, REDACTED)
    for pattern in _VALUE_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return _ASSIGNMENT.sub(_mask_assignment, text)


_ASSIGNMENT = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_]*)(?P<sep>\s*[=:]\s*)(?P<q>['\"]?)(?P<val>[^\s'\"]+)(?P=q)"
)


def _mask_assignment(m: re.Match[str]) -> str:
    if not is_secret_name(m.group("name")) or m.group("val") == REDACTED:
        return m.group(0)
    val = m.group("val")
    if val.startswith("$") or val in ("null", "None", "~", "''", '""'):
        return m.group(0)  # a reference, not a value
    return f"{m.group('name')}{m.group('sep')}{m.group('q')}{REDACTED}{m.group('q')}"


def secret_values(env: Mapping[str, Any]) -> list[str]:
    """The values of the secret-named entries of ``env`` (for :func:`redact_text`)."""
    return [str(v) for k, v in env.items() if is_secret_name(k) and v not in (None, "")]
