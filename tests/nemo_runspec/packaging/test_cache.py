"""The packaging cache (packaging/cache.py): least recently used entries go first; its directory follows env.toml's [cache]."""

from __future__ import annotations

from nemo_runspec.packaging import cache as pcache
from nemo_runspec.packaging.manifest import PackagingPlan


def test_cache_prunes_least_recently_used(tmp_path):
    d = tmp_path / "cache"
    d.mkdir()
    import os

    for i in range(5):
        (d / f"fp{i}.tar.gz").write_bytes(b"x" * i)
        PackagingPlan(kind="code", archive_size=i).write_json(d / f"fp{i}.json")
        os.utime(d / f"fp{i}.json", (1000 + i, 1000 + i))
    pcache.prune(d, keep=2)
    assert sorted(p.name for p in d.iterdir()) == ["fp3.json", "fp3.tar.gz", "fp4.json", "fp4.tar.gz"]
    assert pcache.lookup("fp4", d).archive_size == 4
    (d / "fp3.tar.gz").write_bytes(b"changed size")
    assert pcache.lookup("fp3", d) is None


def test_cache_dir_follows_env_toml_cache_section(tmp_path, monkeypatch):
    from nemo_runspec.packaging.cache import cache_dir

    env_toml = tmp_path / "env.toml"
    env_toml.write_text(f'[cache]\ndir = "{tmp_path}/shared-cache"\n')
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    monkeypatch.chdir(tmp_path)  # no env.toml found above an unrelated cwd... except this one
    assert cache_dir() == tmp_path / "shared-cache" / "packages"
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(tmp_path / "env.toml"))
    assert cache_dir(tmp_path / "explicit") == tmp_path / "explicit"
    env_toml.write_text("[cache]\n")
    assert cache_dir() == tmp_path / "home" / "cache" / "packages"
