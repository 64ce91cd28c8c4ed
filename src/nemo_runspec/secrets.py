"""Recognise and redact secrets (keys, tokens, secrets, passwords).

One rule everywhere, and this module is its only home:

- a *name* (environment variable or config key) is secret when
  :func:`is_secret_name` says so;
- a *secret value* is what :func:`find_secret_values` returns: a string or a
  number (never a bool, ``None`` or ``""``) stored under a secret name, at any
  depth, that is not an unresolved reference such as ``${oc.env:HF_TOKEN}``;
- free text is searched only for secret values of at least
  :data:`MIN_SEARCH_LENGTH` characters (shorter ones would blank ordinary words);
  under its own key a value is always replaced.

Dry-run display, saved job configs, the secrets file, the sbatch-script check
and log tails all use these functions, so what counts as secret cannot differ
between the places a value is shown or written.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***REDACTED***"
#: Secret values shorter than this are not searched for in free text.
MIN_SEARCH_LENGTH = 4
#: Tables that hold provenance labels keyed by setting names (``run.env_sources``):
#: their keys look secret (``env_vars.HF_TOKEN``) but their values are labels.
LABEL_TABLES = frozenset({"env_sources"})

# How a name is judged (split into lower-case words on snake/camel/kebab case):
#
# - a *strong* word anywhere, even inside a word, makes it a secret (``DB_PASSWORD``,
#   ``client_secret``, ``MYPASSWORD``), unless the name ends in a path-like word
#   (``password_file`` holds a path);
# - a *weak* word (key, token, auth, pat, pass) makes it a secret only as the last word,
#   and only when the word before it is not an ordinary data/tokenizer word:
#   ``prompt_key``, ``sort_key``, ``pad_token`` and ``max_tokens`` are not secrets,
#   ``api_key``, ``secret_key``, ``HF_TOKEN`` and ``auth_token`` are.
_STRONG_WORDS = frozenset({
    "apikey", "secret", "password", "passwd", "pwd", "passphrase", "credential", "credentials",
})
# Strong words also count inside a word: MYPASSWORD, dbpassword, ApiKeySecret.
_STRONG_PARTS = ("password", "passwd", "passphrase", "secret", "credential", "apikey")
_WEAK_WORDS = frozenset({"key", "token", "auth", "pat", "pass"})
# Words before ``_pass`` that make it a count or a mode (``first_pass``), not a password.
_PASS_WORDS = frozenset({"first", "second", "third", "last", "num", "multi", "single", "one", "two",
                         "by", "no", "skip", "forward", "backward", "fwd", "bwd", "extra", "each", "every"})
# Words before ``_key`` that make it a data-field / index key, not a credential.
_DATA_KEY_WORDS = frozenset({
    "prompt", "text", "answer", "label", "labels", "input", "inputs", "output", "outputs",
    "message", "messages", "content", "role", "id", "name", "field", "column", "sort",
    "cache", "group", "dict", "lookup", "primary", "foreign", "partition", "hash", "join",
    "question", "response", "context", "system", "chosen", "rejected", "completion",
    "target", "source", "image", "tools", "conversation", "conversations", "public",
    "metadata", "data", "dataset", "split", "value", "index", "map", "shard", "sample",
})
# Words before ``_token`` that make it a tokenizer setting or a count, not a credential.
_TOKENIZER_WORDS = frozenset({
    "pad", "eos", "bos", "eod", "eot", "unk", "sep", "cls", "mask", "special", "start", "end",
    "image", "audio", "video", "vision", "im", "system", "assistant", "tool",
    "think", "boi", "eoi", "fim", "prefix", "suffix", "middle", "newline", "control", "reserved",
    "max", "min", "num", "total", "first", "last", "next", "stop", "extra", "added",
})
# A name ending in one of these holds where a secret lives, not the secret itself.
_PATH_WORDS = frozenset({"file", "path", "dir", "filename", "filepath", "env", "var"})
# Whole names that look like credentials but are not.
_NOT_SECRET_NAMES = frozenset({"pwd", "oldpwd", "secret_env_vars", "public_env_vars"})
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

# Values that look like credentials even under an innocent name: well-known token shapes.
_VALUE_PATTERNS = (
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),                      # Hugging Face
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{20,}"),             # OpenAI / Anthropic / Stripe-style (sk-proj-, sk-ant-)
    re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}"),                    # NVIDIA API
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),                # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"),                # GitHub fine-grained
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),                    # GitLab
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),                 # AWS access key id
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),               # Slack
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),      # Google API key (may end in - or _)
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # a JWT
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*(?:-----END [A-Z ]*PRIVATE KEY-----)?"),
    re.compile(r"\b[0-9a-f]{40}\b(?=.*wandb)", re.I),              # W&B key in a wandb context
)
#: The password of a URL (``postgres://app:PASS@db/x``): group 1; a ``$VAR`` reference is no password.
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:(?!\$)([^\s/@]+)@")


@functools.lru_cache(maxsize=8192)  # pure, and asked for every key of every config rendered
def is_secret_name(name: str) -> bool:
    """True when ``name`` (env var or config key) looks like it holds a credential.

    >>> is_secret_name("HF_TOKEN"), is_secret_name("WANDB_API_KEY"), is_secret_name("tokenizer")
    (True, True, False)
    """
    if not name:
        return False
    if name.lower() in _NOT_SECRET_NAMES:
        return False
    words = [w.lower() for w in _SPLIT.split(name) if w]
    if not words or words[-1] in _PATH_WORDS:
        return False
    if len(words) > 2 and words[-2:] == ["key", "id"]:
        words = words[:-1]  # AWS_ACCESS_KEY_ID is judged like AWS_ACCESS_KEY
    if any(w in _STRONG_WORDS or any(part in w for part in _STRONG_PARTS) for w in words):
        return True
    last = words[-1]
    if last not in _WEAK_WORDS:
        return False
    before = words[-2] if len(words) > 1 else None
    if last == "key" and before in _DATA_KEY_WORDS:
        return False
    if last == "token" and before in _TOKENIZER_WORDS:
        return False
    if last == "pass" and before in _PASS_WORDS:
        return False
    if last in ("auth", "pat", "pass") and before is None:
        return False  # a bare "auth"/"pat"/"pass" is usually a mode, pattern or count
    return True


def redact(obj: Any, *, extra_values: Iterable[str] = (), allow: Iterable[str] = ()) -> Any:
    """Return a copy of ``obj`` (nested dicts/lists/strings) with secrets replaced.

    Values under secret-looking keys become :data:`REDACTED`; any string that
    contains a known secret value (``extra_values``) or a credential-shaped
    token has that part replaced.
    """
    return _redact(obj, searchable(extra_values), frozenset(allow))


#: Profile keys (next to ``env_vars``) that mark env var names secret, or not, whatever
#: :func:`is_secret_name` says of them (docs/env-toml.md, "Secrets").
SECRET_NAMES_KEY, PUBLIC_NAMES_KEY = "secret_env_vars", "public_env_vars"


def marked_names(table: Any) -> tuple[frozenset[str], frozenset[str]]:
    """``(secret, public)`` env var names a profile-like mapping marks explicitly."""
    if not isinstance(table, Mapping):
        return frozenset(), frozenset()

    def names(key: str) -> frozenset[str]:
        value = table.get(key)
        return frozenset(str(n) for n in value) if isinstance(value, list | tuple) else frozenset()

    return names(SECRET_NAMES_KEY), names(PUBLIC_NAMES_KEY)


def is_secret_env(name: str, marked: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
                  value: Any = None) -> bool:
    """The secret rule for one entry: :func:`is_secret_name`, or a credential-shaped ``value``
    (:func:`looks_like_credential`) under any name, overridden by a profile's
    ``secret_env_vars``/``public_env_vars``."""
    secret, public = marked
    return name in secret or (name not in public and (is_secret_name(name) or looks_like_credential(value)))


def _redact(obj: Any, values: list[str], allow: frozenset[str] = frozenset(),
            marked: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())) -> Any:
    if isinstance(obj, Mapping):
        out = {}
        here = marked_names(obj)
        for k, v in obj.items():
            shaped = v if isinstance(v, str) and v not in allow else None  # run.not_secret keeps it
            if isinstance(k, str) and is_secret_env(k, marked, shaped) and is_secret_value(v):
                out[k] = REDACTED
            else:
                out[k] = _redact(v, values, allow, here if k == "env_vars" else (frozenset(), frozenset()))
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_redact(v, values, allow) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj, values, allow=allow)
    return obj


def is_reference(value: object) -> bool:
    """True for an unresolved interpolation such as ``${oc.env:HF_TOKEN}`` (no secret in it)."""
    return isinstance(value, str) and value.startswith("${") and value.endswith("}") and "}" not in value[2:-1]


def searchable(values: Iterable[Any]) -> list[str]:
    """The ``values`` worth searching for in free text (:data:`MIN_SEARCH_LENGTH`), longest first."""
    found = {str(v) for v in values if v is not None and len(str(v)) >= MIN_SEARCH_LENGTH}
    return sorted(found, key=lambda v: (-len(v), v))


def looks_like_credential(value: object) -> bool:
    """True when ``value`` (a string) contains a credential-shaped token (``hf_...``,
    ``sk-...``, ``nvapi-...``, ``ghp_...``, ``AKIA...``, ``xoxb-...``, a private key,
    a JWT) or a URL with a password (``postgres://app:PASS@db``), whatever name it
    is stored under."""
    if not isinstance(value, str):
        return False
    return _URL_PASSWORD.search(value) is not None or any(pattern.search(value) for pattern in _VALUE_PATTERNS)


def redact_shapes(text: str, *, allow: Iterable[str] = ()) -> str:
    """``text`` with credential-shaped tokens and URL passwords replaced (what an error
    message may quote); a token inside one of the ``allow`` strings is kept."""
    allowed = [a for a in allow if a]

    def mask(match: re.Match[str]) -> str:
        return match.group(0) if any(match.group(0) in a for a in allowed) else REDACTED

    for pattern in _VALUE_PATTERNS:
        text = pattern.sub(mask, text)

    def mask_password(match: re.Match[str]) -> str:
        if any(match.group(0) in a for a in allowed):
            return match.group(0)
        start, end = match.span(1)
        return match.group(0)[: start - match.start()] + REDACTED + match.group(0)[end - match.start():]

    return _URL_PASSWORD.sub(mask_password, text)


def redact_text(text: str, values: Iterable[str] = (), *, allow: Iterable[str] = ()) -> str:
    """Replace known secret ``values`` and credential-shaped tokens in ``text``.

    Also masks ``NAME=value`` / ``NAME: value`` pairs where NAME looks secret.
    A credential-shaped token inside one of the ``allow`` strings (values a
    config declared not secret with ``run.not_secret``) is kept.
    """
    allow = list(allow)
    kept = set(allow)
    for v in searchable(v for v in values if v not in kept):  # a value declared not secret stays
        text = text.replace(v, REDACTED)
    return _ASSIGNMENT.sub(_mask_assignment, redact_shapes(text, allow=allow))


_ASSIGNMENT = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_]*)(?P<sep>\s*[=:]\s*)(?P<q>['\"]?)(?P<val>[^\s'\"]+)(?P<end>(?P=q)?)"
)


def _mask_assignment(m: re.Match[str]) -> str:
    if not is_secret_name(m.group("name")) or m.group("val") == REDACTED:
        return m.group(0)
    val = m.group("val")
    if val.startswith("$") or val in ("null", "None", "~", "''", '""'):
        return m.group(0)  # a reference, not a value
    if val.lower() in ("true", "false"):
        return m.group(0)  # a flag (use_auth_token: true), not a secret value
    return f"{m.group('name')}{m.group('sep')}{m.group('q')}{REDACTED}{m.group('end')}"


def secret_arguments(args: Iterable[str]) -> list[str]:
    """The command-line arguments in ``args`` that carry a secret: ``NAME=value`` or
    ``--name=value`` under a secret name, the value after a bare ``--secret-name``, and
    any credential-shaped token. Returns the arguments themselves, in order.

    >>> secret_arguments(["train.lr=1", "HF_TOKEN=abc", "--api-key", "k1", "--seed", "3"])
    ['HF_TOKEN=abc', 'k1']
    """
    return list(dict.fromkeys(arg for arg, _ in _argument_secrets([str(a) for a in args])))


def _argument_secrets(items: list[str]) -> list[tuple[str, str]]:
    """``(argument, its secret value)`` for each argument of :func:`secret_arguments`: the
    value of ``NAME=value``, the whole argument after ``--secret-name`` (even with ``=``
    in it: ``--api-key abc123==``) or a credential-shaped token."""
    found: list[tuple[str, str]] = []
    for i, arg in enumerate(items):
        name, eq, value = arg.lstrip("-").partition("=")
        if (eq and is_secret_name(name.replace("-", "_")) and is_secret_value(value)
                and value.lower() not in ("true", "false", "none", "null")):
            found.append((arg, value))
        elif (not eq and arg.startswith("-") and is_secret_name(name.replace("-", "_"))
              and i + 1 < len(items) and not items[i + 1].startswith("-")):
            found.append((items[i + 1], items[i + 1]))
        elif looks_like_credential(arg):
            found.append((arg, arg))
    return found


def is_secret_value(value: object) -> bool:
    """True when ``value``, held under a secret name, is a literal secret worth hiding."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    return value != "" and not is_reference(value)


def find_secret_values(*objs: Any) -> list[str]:
    """Every secret value (see the module docstring) in ``objs``, deduplicated.

    Walks nested mappings, lists and tuples; :data:`LABEL_TABLES` are skipped. A list
    of strings is read as a command line too (:func:`secret_arguments`): the value
    after ``--api-key`` in ``run.cli.passthrough`` is a secret wherever it is shown.
    """
    found: dict[str, None] = {}

    def walk(node: Any, marked: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())) -> None:
        if isinstance(node, Mapping):
            here = marked_names(node)
            for key, value in node.items():
                if key in LABEL_TABLES:
                    continue
                if isinstance(value, (Mapping, list, tuple)):
                    walk(value, here if key == "env_vars" else (frozenset(), frozenset()))
                elif isinstance(key, str) and is_secret_env(key, marked, value) and is_secret_value(value):
                    found[str(value)] = None
        elif isinstance(node, (list, tuple)):
            if node and all(isinstance(item, str) for item in node):
                for arg, value in _argument_secrets(node):  # NAME=value: the value; --name value: value
                    if not looks_like_credential(arg):  # (a credential-shaped token is masked anywhere)
                        found[value] = None
            for item in node:
                walk(item)

    for obj in objs:
        walk(obj)
    return list(found)


def secret_values(env: Mapping[str, Any]) -> list[str]:
    """The secret values of ``env`` (:func:`find_secret_values` of one mapping)."""
    return find_secret_values(env)
