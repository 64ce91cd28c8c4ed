"""Resources of a profile (env/resources.py): how many processes torchrun starts per node."""

from __future__ import annotations


def test_a_cpu_cluster_profile_runs_nproc_per_node_processes(tmp_path):
    """gpus_per_node = 0 with nproc_per_node = N: no GPUs asked of Slurm, N torchrun workers
    (docs/execution.md, Launchers). Any other disagreement of the alias stays an error."""
    import pytest

    from nemo_runspec.env import load_env_profile
    from nemo_runspec.env.resources import torchrun_processes
    from nemo_runspec.errors import EnvFileError

    path = tmp_path / "env.toml"
    path.write_text('[cpu]\nexecutor = "slurm"\naccount = "a"\npartition = "b"\ngpus_per_node = 0\n'
                    'nproc_per_node = 2\n\n[bad]\nexecutor = "slurm"\ngpus_per_node = 4\nnproc_per_node = 2\n')
    prof = load_env_profile("cpu", path)
    assert prof["gpus_per_node"] == 0 and torchrun_processes(prof.values, 0) == 2
    with pytest.raises(EnvFileError, match="must agree"):
        load_env_profile("bad", path)
