"""The typed schema of a data-prep config: the one list of its keys, types and defaults.

Each stage has a model (:data:`SETTINGS`): the keys it reads, their types and
the value used when a key is absent from the config (the shipped
``config/data_prep/default.yaml`` files set most of them explicitly). The run
code reads its settings from the validated model, never from the raw config
with a fallback of its own.

Validation is strict: ``sample: 1.5``, ``sample: true`` and ``sample: "100"``
are errors, not 1 or 100. :mod:`nemotron.data_prep.validation` turns pydantic's
errors into one-line :class:`~nemo_runspec.errors.ConfigError` naming file,
line and key. This module imports pydantic: import it only where a config is
validated (``nemotron --help`` must not load pydantic).

``python -m nemotron.data_prep.schema`` prints the key table of docs/data-prep.md.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nemo_runspec.config.typed import describe, yaml_text
from nemo_runspec.errors import ConfigError

from .sharding import RL_SPLITS, SPLIT_NAMES, parse_split
from .sources import MAX_RECORD_BYTES

InputFormat = Literal["auto", "jsonl", "parquet", "hf"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Publish(_Strict):
    """``publish:``: where the finished output is registered as an artifact."""

    name: str | None = Field(None, description="artifact name to publish the output dir as; null: do not publish",
                             examples=["nano3-pretrain-data"])
    aliases: list[str] = Field(default_factory=lambda: ["latest"],
                               description="aliases pointed at the new version ([] for none)", examples=[["latest"]])
    copy_: bool = Field(False, alias="copy", description="copy the output into the registry instead of "
                                                         "recording its path", examples=[True])

    @field_validator("name")
    @classmethod
    def _artifact_name(cls, value: str | None) -> str | None:
        from nemo_runspec.artifacts.refs import NAME_RE

        if value is not None and "${" not in value and not NAME_RE.match(value):
            raise ValueError(f"invalid artifact name {value!r}: use letters, digits, '.', '_' and '-'")
        return value

    @field_validator("aliases")
    @classmethod
    def _alias_names(cls, value: list[str]) -> list[str]:
        from nemo_runspec.artifacts.refs import ALIAS_RE, version_number

        for alias in value:
            if "${" not in alias and (not ALIAS_RE.match(alias) or version_number(alias) is not None):
                raise ValueError(f"invalid alias {alias!r}: aliases start with a letter and are not "
                                 "version numbers like v3")
        return value


class _Input(_Strict):
    paths: list[str] | str = Field(description="files, globs, directories or fsspec URLs; "
                                               "`hf:org/name[:config][@split]` (online)",
                                   examples=[["/data/raw/*.jsonl"]])
    format: InputFormat = Field("auto", description="auto (by file extension), jsonl, parquet or hf",
                                examples=["jsonl"])

    @field_validator("paths")
    @classmethod
    def _some_paths(cls, value: list[str] | str) -> list[str] | str:
        if not value or (isinstance(value, list) and not all(value)):
            raise ValueError("input.paths needs at least one non-empty path")
        return value


class PretrainInput(_Input):
    """``input:`` of the pretrain stage."""

    text_field: str = Field("text", description="JSONL key / Parquet column holding the document text",
                            examples=["text"])


class SftInput(_Input):
    """``input:`` of the SFT stage."""

    messages_field: str = Field("messages", description="key holding the [{role, content}, ...] conversation",
                                examples=["messages"])


class RlInput(_Input):
    """``input:`` of the RL stage."""

    prompt_field: str = Field("prompt", description="key holding the prompt", examples=["prompt"])
    answer_field: str = Field("answer", description="key holding the reference answer", examples=["answer"])
    messages_field: str = Field("messages", description="key holding a conversation (last assistant turn = "
                                                        "answer)", examples=["messages"])


class _Tokenizer(_Strict):
    path: str = Field(description="dir with tokenizer.json, a tokenizer.json file or a hub id org/name",
                      examples=["/models/nemotron-3-nano/tokenizer"])
    eod_token: str | None = Field(None, description="end-of-document token; null: the tokenizer's eos_token, "
                                                    "else <|endoftext|>, </s>, ...", examples=["<|endoftext|>"])


class PretrainTokenizer(_Tokenizer):
    """``tokenizer:`` of the pretrain stage."""

    add_eod: bool = Field(True, description="append the end-of-document token to every document",
                          examples=[True])


class SftTokenizer(_Tokenizer):
    """``tokenizer:`` of the SFT stage."""

    chat_template: str | None = Field(None, description="jinja2 chat template; null: tokenizer_config.json's "
                                                        "(or ChatML)", examples=["{% for m in messages %}..."])
    pad_token: str | None = Field(None, description="padding token; null: the tokenizer's pad_token, else "
                                                    "the end-of-document token", examples=["<|pad|>"])


class DataPrepSettings(_Strict):
    """The keys every stage reads. ``SPLITS`` names the splits that ``split`` weighs."""

    SPLITS: ClassVar[tuple[str, ...]] = SPLIT_NAMES

    run: dict[str, Any] | None = Field(None, description="launcher settings (run.output, run.env); "
                                                         "not read by the data prep")
    data_root: str | None = Field(None, description="base of relative input/tokenizer paths: a dir, an fsspec "
                                                    "URL or pkg:<package>/<dir>; null: the current dir",
                                  examples=["pkg:nemotron/recipes/nano3/sample_data"])
    name: str | None = Field(None, description="output goes to $NEMOTRON_HOME/data/<name>/<content key>; "
                                               "null: nano3-<stage>", examples=["nano3-pretrain"])
    output_dir: str | None = Field(None, description="write here instead (null: the default above)",
                                   examples=["/scratch/out"])
    num_shards: int = Field(1, ge=1, description="shards (tasks, output files); the output does not "
                                                 "depend on workers", examples=[128])
    split: str | int | float | list[int | float] = Field(
        "98,1,1", description="split weights, as \"98,1,1\" or [98, 1, 1]", examples=["98,1,1"])
    seed: int = Field(1234, description="salt of the split hash", examples=[1234])
    workers: int | None = Field(None, ge=0, description="shards run at once (Ray tasks on a Ray cluster, worker "
                                                        "processes locally); null: all CPUs; 0: in-process",
                                examples=[4])
    sample: int | None = Field(None, ge=1, description="keep only the first N input records; null: all",
                               examples=[1000])
    max_bad_fraction: float | None = Field(None, ge=0, le=1, description="fail at the end if more than this "
                                                                         "fraction of records is bad; null: "
                                                                         "never", examples=[0.01])
    max_record_bytes: int = Field(MAX_RECORD_BYTES, ge=1, description="a record (JSONL line, Parquet row) over "
                                                                      "this many bytes is bad (too_large), "
                                                                      "never loaded", examples=[8388608])
    min_records: int = Field(10, ge=1, description="fail when fewer records than this make it into the output "
                                                  "(an empty or near-empty result)", examples=[1000])
    allow_empty: bool = Field(False, description="accept and publish an empty result (no records, or an empty "
                                                 "train split) instead of failing", examples=[True])
    publish: Publish = Field(default_factory=Publish, description="publish the output to the artifact "
                                                                  "registry")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        if value is not None and "${" not in value and (not value.strip(". ") or "/" in value or "\\" in value):
            raise ValueError(f"name {value!r} must be a plain directory name (no '/', not '.' or '..')")
        return value

    @field_validator("split")
    @classmethod
    def _split_weights(cls, value: Any) -> Any:
        if isinstance(value, str) and "${" in value:
            return value
        try:
            parse_split(value, cls.SPLITS)
        except ConfigError as exc:
            problem = exc.problem.removeprefix("split ")
            raise ValueError(f"{problem} (weights for {', '.join(cls.SPLITS)})") from None
        return value

    def fractions(self) -> dict[str, float]:
        """``split`` as normalised fractions per split name."""
        return parse_split(self.split, self.SPLITS)


class PretrainSettings(DataPrepSettings):
    """nano3 pretrain data prep: raw text -> Megatron .bin/.idx + blend.json."""

    input: PretrainInput = Field(description="the raw documents")
    tokenizer: PretrainTokenizer = Field(description="the tokenizer")


class SftSettings(DataPrepSettings):
    """nano3 SFT data prep: conversations -> packed sequences with loss masks."""

    input: SftInput = Field(description="the conversations")
    tokenizer: SftTokenizer = Field(description="the tokenizer and chat template")
    pack_size: int = Field(4096, ge=1, description="tokens per packed sequence", examples=[4096])
    packing: Literal["first_fit", "sequential"] = Field("first_fit", description="how conversations are "
                                                                                 "grouped into packs",
                                                        examples=["first_fit"])
    too_long: Literal["drop", "truncate"] = Field("drop", description="a conversation longer than pack_size: "
                                                                      "drop (a bad record) or truncate",
                                                  examples=["truncate"])


class RlSettings(DataPrepSettings):
    """nano3 RL data prep: prompt/answer records -> NeMo-RL JSONL."""

    SPLITS: ClassVar[tuple[str, ...]] = RL_SPLITS

    input: RlInput = Field(description="the prompt/answer records")
    split: str | int | float | list[int | float] = Field(
        "95,5", description="split weights (train, validation), as \"95,5\" or [95, 5]", examples=["95,5"])
    require_answer: bool = Field(True, description="records without a reference answer are bad",
                                 examples=[True])
    dedupe: bool = Field(True, description="keep only the first record of each normalised prompt",
                         examples=[True])
    task_name: str = Field("math", min_length=1,
                           description="the NeMo-RL task (environment) every record is routed to",
                           examples=["math"])


#: The model of each stage, by the name the CLI uses (``nemotron nano3 data prep <stage>``).
SETTINGS: dict[str, type[DataPrepSettings]] = {"pretrain": PretrainSettings, "sft": SftSettings, "rl": RlSettings}


def keys(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """Every dotted key of ``model`` with its pydantic ``FieldInfo`` (mappings expanded)."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        key = prefix + (info.alias or name)
        out[key] = info
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            out.update(keys(sub, key + "."))
    return out


def key_table() -> str:
    """The markdown table of every data-prep key (docs/data-prep.md holds a copy)."""
    rows: dict[str, dict[str, Any]] = {}
    for stage, model in SETTINGS.items():
        for key, info in keys(model).items():
            sub = info.annotation
            is_section = isinstance(sub, type) and issubclass(sub, BaseModel)
            if is_section:
                default = "required" if info.is_required() else ""
            elif info.is_required():
                default = "required"
            else:
                default = f"`{yaml_text(info.get_default(call_default_factory=True))}`"
            row = rows.setdefault(key, {"type": describe(sub, info.metadata), "defaults": {},
                                        "doc": info.description or "", "section": is_section})
            row["defaults"].setdefault(default, []).append(stage)
    lines = ["| key | type | if absent | stages | meaning |", "|---|---|---|---|---|"]
    # plain top-level keys first, then each section followed by its keys
    sections = [k for k, r in rows.items() if r["section"]]
    order = [k for k in rows if "." not in k and k not in sections]
    order += [k for sec in sections for k in rows if k == sec or k.startswith(sec + ".")]
    for key in order:
        row = rows[key]
        stages = sorted({s for ss in row["defaults"].values() for s in ss}, key=list(SETTINGS).index)
        if len(row["defaults"]) == 1:
            default = next(iter(row["defaults"]))
        else:
            default = "; ".join(f"{', '.join(ss)}: {d}" for d, ss in row["defaults"].items())
        shown = "all" if len(stages) == len(SETTINGS) else ", ".join(stages)
        doc = row["doc"].replace("|", "\\|")
        lines.append(f"| `{key}` | {row['type']} | {default} | {shown} | {doc} |")
    return "\n".join(lines)


if __name__ == "__main__":  # `python -m nemotron.data_prep.schema` (docs/data-prep.md)
    print(key_table())
