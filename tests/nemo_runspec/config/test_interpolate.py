"""The reference's helpers in nemo_runspec.utils (config/interpolate.py): run interpolations, remote paths."""

from __future__ import annotations


def test_run_interpolations_resolve_as_the_reference_describes() -> None:
    from omegaconf import OmegaConf

    from nemo_runspec.config.interpolate import resolve_run_interpolations

    run = {"env": {"nodes": 8, "container_image": "img:1"}, "wandb": {"project": None}, "data": "d:latest"}
    config = {"nodes": "${run.env.nodes}", "tag": "n${run.env.nodes}-${run.wandb.project}",
              "data": ["${run.data}", "${art:data,path}"], "env": "${run.env}", "typo": "${run.envv.nodes}"}
    out = resolve_run_interpolations(config, OmegaConf.create({"env": run["env"], "wandb": run["wandb"],
                                                              "data": run["data"]}))
    assert out == {"nodes": 8, "tag": "n8-", "data": ["d:latest", "${art:data,path}"],
                   "env": {"nodes": 8, "container_image": "img:1"}, "typo": "${run.envv.nodes}"}
    assert config["nodes"] == "${run.env.nodes}"  # a copy


def test_paths_for_remote() -> None:
    from nemo_runspec.config.interpolate import rewrite_paths_for_remote

    got = rewrite_paths_for_remote({"a": "${oc.env:PWD}/data", "b": ["${oc.env:NEMO_RUN_DIR,.}/ckpt", "/repo/src/x.py"],
                                    "c": "/repository/x", "d": 3}, "/repo/")
    assert got == {"a": "/nemo_run/code/data", "b": ["/nemo_run/ckpt", "/nemo_run/code/src/x.py"],
                   "c": "/repository/x", "d": 3}
