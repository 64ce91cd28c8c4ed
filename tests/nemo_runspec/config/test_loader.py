"""Tests for nemo_runspec.config.loader: names, paths, defaults chains, YAML errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nemo_runspec.cli_context import GlobalContext
from nemo_runspec.config import config_info, list_configs, parse_config
from nemo_runspec.errors import ConfigError
from tests.import_probes import imported_after


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def cfgdir(tmp_path: Path) -> Path:
    d = tmp_path / "config"
    write(d / "default.yaml", "train:\n  iters: 100\n  lr: 0.1\nmodel: {size: big}\n")
    write(d / "tiny.yaml", "defaults: default\ntrain:\n  iters: 5\n")
    write(d / "small.yml", "train: {iters: 50}\n")
    return d


def ctx(config: str | None = None, overrides: list[str] | None = None) -> GlobalContext:
    return GlobalContext(config=config, overrides=list(overrides or []))


def test_default_config_used_when_none_given(cfgdir: Path) -> None:
    cfg = parse_config(ctx(), cfgdir, "default")
    assert cfg.train.iters == 100
    assert cfg.model.size == "big"


def test_name_resolves_in_config_dir_with_defaults_inheritance(cfgdir: Path) -> None:
    cfg = parse_config(ctx("tiny"), cfgdir, "default")
    assert cfg.train.iters == 5  # child wins
    assert cfg.train.lr == 0.1  # inherited from parent
    assert cfg.model.size == "big"
    assert "defaults" not in cfg


def test_yml_suffix_is_accepted(cfgdir: Path) -> None:
    assert parse_config(ctx("small"), cfgdir, "default").train.iters == 50


def test_path_with_separator_is_relative_to_cwd(cfgdir: Path, tmp_path: Path, monkeypatch) -> None:
    write(tmp_path / "elsewhere" / "mine.yaml", "train: {iters: 7}\n")
    monkeypatch.chdir(tmp_path)
    assert parse_config(ctx("elsewhere/mine.yaml"), cfgdir, "default").train.iters == 7
    assert parse_config(ctx("./elsewhere/mine.yaml"), cfgdir, "default").train.iters == 7


def test_bare_yaml_filename_is_a_path_not_a_name(cfgdir: Path, tmp_path: Path, monkeypatch) -> None:
    write(tmp_path / "run" / "tiny.yaml", "train: {iters: 1}\n")
    monkeypatch.chdir(tmp_path / "run")
    # "tiny.yaml" is taken from cwd, not from the config dir's tiny.yaml (iters 5).
    assert parse_config(ctx("tiny.yaml"), cfgdir, "default").train.iters == 1


def test_absolute_path(cfgdir: Path, tmp_path: Path) -> None:
    p = write(tmp_path / "abs.yaml", "x: 1\n")
    assert parse_config(ctx(str(p)), cfgdir, "default").x == 1


def test_unknown_name_lists_configs_and_suggests(cfgdir: Path) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(ctx("tiyn"), cfgdir, "default")
    msg = str(err.value)
    assert msg.startswith(f"{cfgdir}: unknown config 'tiyn'")
    assert "did you mean 'tiny'?" in msg
    assert "valid: default, small, tiny" in msg


def test_missing_path_is_an_error(cfgdir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found: .*nope.yaml"):
        parse_config(ctx(str(tmp_path / "nope.yaml")), cfgdir, "default")


def test_missing_config_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config directory does not exist"):
        parse_config(ctx(), tmp_path / "absent", "default")


def test_list_configs(cfgdir: Path) -> None:
    (cfgdir / "notes.txt").write_text("x")
    assert list_configs(cfgdir) == ["default", "small", "tiny"]


def test_defaults_list_merges_in_order_child_on_top(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "a.yaml", "x: a\ny: a\nz: a\nlst: [1, 2, 3]\n")
    write(d / "b.yaml", "y: b\nz: b\nlst: [9]\n")
    write(d / "child.yaml", "defaults: [a, b]\nz: child\n")
    cfg = parse_config(ctx("child"), d, "child")
    assert (cfg.x, cfg.y, cfg.z) == ("a", "b", "child")
    assert list(cfg.lst) == [9]  # lists are replaced, not concatenated
    info = config_info(cfg)
    assert info is not None
    assert [p.name for p in info.files] == ["a.yaml", "b.yaml", "child.yaml"]


def test_self_placement_puts_child_below_parent(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "base.yaml", "x: base\n")
    write(d / "child.yaml", "defaults: [_self_, base]\nx: child\ny: child\n")
    cfg = parse_config(ctx("child"), d, "child")
    assert cfg.x == "base"
    assert cfg.y == "child"


def test_multilevel_chain_and_relative_path_default(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(tmp_path / "shared" / "root.yaml", "a: root\nb: root\nc: root\n")
    write(d / "mid.yaml", "defaults: ../shared/root.yaml\nb: mid\nc: mid\n")
    write(d / "leaf.yaml", "defaults: [mid]\nc: leaf\n")
    cfg = parse_config(ctx("leaf"), d, "leaf")
    assert (cfg.a, cfg.b, cfg.c) == ("root", "mid", "leaf")


def test_cycle_is_an_error_naming_the_chain(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "tiny.yaml", "defaults: [base]\nx: 1\n")
    write(d / "base.yaml", "# comment\ndefaults: tiny\ny: 2\n")
    with pytest.raises(ConfigError) as err:
        parse_config(ctx("tiny"), d, "tiny")
    assert "tiny.yaml -> base.yaml -> tiny.yaml" in str(err.value)
    assert err.value.path == str(d / "base.yaml")
    assert err.value.line == 2


def test_self_cycle(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "loop.yaml", "defaults: loop\n")
    with pytest.raises(ConfigError, match=r"loop\.yaml -> loop\.yaml"):
        parse_config(ctx("loop"), d, "loop")


def test_diamond_is_not_a_cycle(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "base.yaml", "x: 0\n")
    write(d / "l.yaml", "defaults: base\nl: 1\n")
    write(d / "r.yaml", "defaults: base\nr: 1\n")
    write(d / "top.yaml", "defaults: [l, r]\n")
    cfg = parse_config(ctx("top"), d, "top")
    assert (cfg.x, cfg.l, cfg.r) == (0, 1, 1)


def test_unknown_parent_names_file_and_line(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "base.yaml", "x: 1\n")
    write(d / "child.yaml", "y: 2\ndefaults: [bsae]\n")
    with pytest.raises(ConfigError) as err:
        parse_config(ctx("child"), d, "child")
    assert str(err.value).startswith(f"{d / 'child.yaml'}:2: unknown config 'bsae' in defaults")
    assert "did you mean 'base'?" in str(err.value)


def test_bad_defaults_type(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "child.yaml", "defaults: {a: 1}\n")
    with pytest.raises(ConfigError, match="'defaults' must be a config name or a list"):
        parse_config(ctx("child"), d, "child")


def test_yaml_syntax_error_has_path_and_line(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "bad.yaml", "a: 1\nb: 2\nc: [1, 2\nd: 4\n")
    with pytest.raises(ConfigError) as err:
        parse_config(ctx("bad"), d, "bad")
    assert err.value.path == str(d / "bad.yaml")
    assert err.value.line is not None and err.value.line >= 3
    assert str(err.value).startswith(f"{d / 'bad.yaml'}:{err.value.line}: invalid YAML")


def test_syntax_error_in_parent_names_the_parent(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "base.yaml", "a: 1\n  b: 2\n")
    write(d / "child.yaml", "defaults: base\n")
    with pytest.raises(ConfigError) as err:
        parse_config(ctx("child"), d, "child")
    assert err.value.path == str(d / "base.yaml")
    assert err.value.line == 2


def test_duplicate_key_is_an_error_with_line(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "dup.yaml", "a: 1\nb: 2\na: 3\n")
    with pytest.raises(ConfigError) as err:
        parse_config(ctx("dup"), d, "dup")
    assert err.value.line == 3
    assert "duplicate key" in str(err.value)


def test_top_level_must_be_mapping(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "list.yaml", "- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping at the top level, not a list"):
        parse_config(ctx("list"), d, "list")


def test_empty_file_is_empty_config(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "empty.yaml", "# nothing\n")
    assert dict(parse_config(ctx("empty"), d, "empty")) == {}


def test_interpolations_are_not_resolved(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "base.yaml", "data:\n  path: ${art:data,path}\n  seq: ${model.seq}\nmodel: {seq: 8}\n")
    write(d / "child.yaml", "defaults: base\nmodel: {seq: 16}\n")
    cfg = parse_config(ctx("child", ["model.seq=32"]), d, "child")
    raw = OmegaConf.to_container(cfg, resolve=False)
    assert raw["data"] == {"path": "${art:data,path}", "seq": "${model.seq}"}
    assert cfg.data.seq == 32  # plain interpolation still works when resolved later


def test_overrides_are_applied(cfgdir: Path) -> None:
    cfg = parse_config(ctx("tiny", ["train.iters=9", "+train.extra=x"]), cfgdir, "default")
    assert cfg.train.iters == 9
    assert cfg.train.extra == "x"


def test_bad_override_fails_parse_config(cfgdir: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key 'train.itres'"):
        parse_config(ctx("tiny", ["train.itres=9"]), cfgdir, "default")


def test_env_files_record_which_file_set_each_run_env_key(tmp_path: Path) -> None:
    d = tmp_path / "c"
    write(d / "base.yaml", "run:\n  env:\n    nodes: 2\n    partition: a\n")
    write(d / "child.yaml", "defaults: base\nrun:\n  env:\n    partition: b\n")
    cfg = parse_config(ctx("child"), d, "child")
    info = config_info(cfg)
    assert info is not None
    assert info.env_files == {"nodes": d / "base.yaml", "partition": d / "child.yaml"}
    assert info.path == d / "child.yaml"
    assert config_info(OmegaConf.create({})) is None


def test_import_does_not_pull_heavy_modules() -> None:
    out = imported_after(
        "import nemo_runspec.config", ("pydantic", "nemo_run", "rich", "torch", "ray", "wandb")
    )
    assert out.stdout.strip() == ""


def test_outside_config_defaults_found_in_recipe_config_dir(cfgdir: Path, tmp_path: Path) -> None:
    mine = write(tmp_path / "elsewhere" / "mine.yaml", "defaults: [default]\ntrain:\n  lr: 0.5\n")
    cfg = parse_config(ctx(str(mine)), cfgdir, "default")
    recipe_default = OmegaConf.load(cfgdir / "default.yaml")
    # everything from the recipe's default.yaml is inherited, mine.yaml wins on top
    for key in recipe_default.train:
        if key != "lr":
            assert cfg.train[key] == recipe_default.train[key]
    assert cfg.train.lr == 0.5
    info = config_info(cfg)
    assert info is not None
    assert info.files == [cfgdir / "default.yaml", mine]


def test_defaults_next_to_including_file_win_over_config_dir(cfgdir: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    write(other / "default.yaml", "train:\n  origin: sibling\n")
    mine = write(other / "mine.yaml", "defaults: [default]\nx: 1\n")
    cfg = parse_config(ctx(str(mine)), cfgdir, "default")
    assert cfg.train.origin == "sibling"
    assert config_info(cfg).files[0] == other / "default.yaml"


def test_defaults_chain_from_outside_reaches_config_dir_parents(cfgdir: Path, tmp_path: Path) -> None:
    # mine -> tiny (config dir) -> default (config dir)
    mine = write(tmp_path / "elsewhere" / "mine.yaml", "defaults: tiny\nx: 2\n")
    cfg = parse_config(ctx(str(mine)), cfgdir, "default")
    assert cfg.train.iters == 5
    assert [p.name for p in config_info(cfg).files] == ["default.yaml", "tiny.yaml", "mine.yaml"]


def test_unknown_default_from_outside_names_both_places(cfgdir: Path, tmp_path: Path) -> None:
    mine = write(tmp_path / "elsewhere" / "mine.yaml", "x: 1\ndefaults: [defualt]\n")
    with pytest.raises(ConfigError) as ei:
        parse_config(ctx(str(mine)), cfgdir, "default")
    err = ei.value
    assert err.path is not None and Path(err.path) == mine
    assert err.line == 2
    assert str(tmp_path / "elsewhere") in err.problem and str(cfgdir) in err.problem
    assert "did you mean 'default'" in (err.hint or "")


def test_child_config_typo_is_warned_with_did_you_mean(tmp_path, capsys):
    from nemo_runspec.config import load_config

    (tmp_path / "base.yaml").write_text("train:\n  train_iters: 10\n  lr: 0.1\n")
    (tmp_path / "child.yaml").write_text("defaults: [base]\ntrain:\n  trian_iters: 4\n  brand_new: 1\n")
    cfg, _ = load_config("child", tmp_path)
    err = capsys.readouterr().err
    assert "child.yaml:3: key 'train.trian_iters' is not in the configs it extends" in err
    assert "did you mean 'train.train_iters'" in err
    assert "brand_new" not in err  # genuinely new keys are allowed and not flagged
    assert cfg.train.trian_iters == 4  # a warning, not an error
