"""Load Hugging Face tokenizers (``tokenizers`` library) and render chat templates.

A tokenizer spec is a local directory holding ``tokenizer.json`` (and optionally
``tokenizer_config.json``), a path to a ``tokenizer.json`` file, or a hub id
(``org/name``) fetched with ``tokenizers.Tokenizer.from_pretrained`` (online only).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError

from .paths import resolve_path

#: Used when a tokenizer ships no ``chat_template`` (ChatML, prefix-stable).
DEFAULT_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_EOD_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "[SEP]")


@dataclass
class TokenizerInfo:
    """What data prep needs to know about a tokenizer, picklable for Ray tasks."""

    spec: str
    tokenizer_json: str  # the serialized tokenizer (tokenizer.json contents)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """sha256 of the tokenizer definition and its config (chat template, special tokens)."""
        h = hashlib.sha256(self.tokenizer_json.encode())
        h.update(json.dumps(self.config, sort_keys=True, default=str).encode())
        return h.hexdigest()

    def load(self) -> Any:
        """Return the ``tokenizers.Tokenizer`` (cached per process)."""
        return _from_str(self.tokenizer_json)

    @property
    def vocab_size(self) -> int:
        """Vocabulary size including added tokens."""
        return int(self.load().get_vocab_size(with_added_tokens=True))

    def token_id(self, token: str) -> int | None:
        """Id of a (special) token, or None."""
        return self.load().token_to_id(token)

    def eod_id(self, eod_token: str | None = None) -> int:
        """Id of the end-of-document token: ``eod_token`` if given, else the config's eos, else a known name."""
        names = [eod_token] if eod_token else [_token_str(self.config.get("eos_token")), *_EOD_CANDIDATES]
        for name in names:
            if name and (tid := self.token_id(name)) is not None:
                return tid
        raise ConfigError(
            f"tokenizer {self.spec!r} has no end-of-document token",
            key="tokenizer.eod_token",
            hint=f"set tokenizer.eod_token to one of its special tokens (tried {', '.join(n for n in names if n)})",
        )

    @property
    def chat_template(self) -> str:
        """The jinja2 chat template from tokenizer_config.json, or :data:`DEFAULT_CHAT_TEMPLATE`."""
        tpl = self.config.get("chat_template")
        if isinstance(tpl, list):  # HF allows [{"name": "default", "template": ...}]
            tpl = next((t.get("template") for t in tpl if t.get("name") == "default"), None)
        return tpl or DEFAULT_CHAT_TEMPLATE


def _token_str(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


@lru_cache(maxsize=4)
def _from_str(text: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_str(text)


def load_tokenizer(spec: str, *, base: str | None = None) -> TokenizerInfo:
    """Load a tokenizer from a local dir/file (resolved against ``base``) or a hub id."""
    if not spec:
        raise ConfigError("no tokenizer configured", key="tokenizer.path", hint="set tokenizer.path")
    local = resolve_path(spec, base)
    path = Path(local)
    config: dict[str, Any] = {}
    if path.is_dir():
        tj = path / "tokenizer.json"
        if not tj.is_file():
            raise ConfigError(f"tokenizer dir {path} has no tokenizer.json", key="tokenizer.path")
        cfg_file = path / "tokenizer_config.json"
        if cfg_file.is_file():
            config = json.loads(cfg_file.read_text(encoding="utf-8"))
        return TokenizerInfo(spec=str(path), tokenizer_json=tj.read_text(encoding="utf-8"), config=config)
    if path.is_file():
        cfg_file = path.with_name("tokenizer_config.json")
        if cfg_file.is_file():
            config = json.loads(cfg_file.read_text(encoding="utf-8"))
        return TokenizerInfo(spec=str(path), tokenizer_json=path.read_text(encoding="utf-8"), config=config)
    if spec.count("/") == 1 and not spec.startswith((".", "/", "~")):
        return _from_hub(spec)
    raise ConfigError(
        f"tokenizer {spec!r} not found (resolved to {local})",
        key="tokenizer.path",
        hint="give a directory with tokenizer.json, a tokenizer.json file, or a hub id like org/name",
    )


def _from_hub(repo_id: str) -> TokenizerInfo:  # pragma: no cover - needs network
    from tokenizers import Tokenizer

    tok = Tokenizer.from_pretrained(repo_id)
    config: dict[str, Any] = {}
    try:
        from huggingface_hub import hf_hub_download

        config = json.loads(Path(hf_hub_download(repo_id, "tokenizer_config.json")).read_text())
    except Exception:  # noqa: BLE001 - the config is optional
        config = {}
    return TokenizerInfo(spec=repo_id, tokenizer_json=tok.to_str(), config=config)


@lru_cache(maxsize=8)
def _compile_template(template: str) -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    env.globals["raise_exception"] = raise_exception
    return env.from_string(template)


def render_chat(
    template: str,
    messages: list[dict[str, Any]],
    *,
    add_generation_prompt: bool = False,
    **extra: Any,
) -> str:
    """Render ``messages`` with a jinja2 chat template (HF ``apply_chat_template`` semantics)."""
    return _compile_template(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, **extra
    )


SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>")


def train_tokenizer(
    texts: list[str],
    out_dir: str | Path,
    *,
    vocab_size: int = 4096,
    chat_template: str = DEFAULT_CHAT_TEMPLATE,
) -> Path:
    """Train a small byte-level BPE tokenizer offline and save it as an HF tokenizer dir.

    Writes ``tokenizer.json`` and ``tokenizer_config.json`` (special tokens
    ``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``, ``<|pad|>`` and
    ``chat_template``). Used for the shipped sample tokenizer, tests and benchmarks.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|endoftext|>",
        "pad_token": "<|pad|>",
        "model_max_length": 4096,
        "chat_template": chat_template,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return out
