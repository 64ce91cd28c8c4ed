"""Ray on Slurm (execution/ray.py): our template, one raylet per node, per-node prestart, and the profile's ray keys in the template's environment."""

from __future__ import annotations

from nemo_runspec.env import (
    load_env_profile,
)
from tests.nemo_runspec.env.env_toml import write
from tests.nemo_runspec.execution.test_executor import BASE, make, spec


def test_ray_uses_our_template_one_raylet_per_node_and_per_node_prestart():
    from nemo_runspec.execution.ray import RAY_TEMPLATE

    ex = make(dict(BASE, startup_commands=["echo hi"], ray_port_base=31000, ray_timeout=42),
              runspec=spec(launch="ray"))
    assert ex.ray_template == str(RAY_TEMPLATE) and RAY_TEMPLATE.is_file()
    assert ex.launcher is None and ex.ntasks_per_node == 1
    assert ex.env_vars["NEMOTRON_RAY_PORT_BASE"] == "31000"
    assert ex.env_vars["NEMOTRON_RAY_TIMEOUT"] == "42"
    # startup commands go to the per-node pre-start file, not to a one-off srun
    assert "pre-ray-start.sh" in ex.setup_lines and "echo hi" in ex.setup_lines
    assert "srun --ntasks-per-node=1" not in ex.setup_lines


def test_ray_profile_keys_reach_template_env(tmp_path):
    from nemo_runspec.execution.ray import ray_env_vars

    path = write(tmp_path / "env.toml", "[r]\nray_port_base = 21000\nray_timeout = 42\n")
    prof = load_env_profile("r", path)
    env = ray_env_vars(python=None, port_base=prof.get("ray_port_base"), timeout=prof.get("ray_timeout"))
    assert env == {"NEMOTRON_RAY_PORT_BASE": "21000", "NEMOTRON_RAY_TIMEOUT": "42"}
