"""The env.toml forms the reference system documents (its profile reference table and
examples), rewritten here in our own words: users bring such files, so each must load with
the same meaning. Shared by the env, CLI and dry-run tests.

``EXAMPLES[name] = (env.toml text, {profile: {key: expected value}})``.
``REFUSED[name] = (env.toml text, profile, line of the error, what the error must say)``: forms
the reference documents that cannot work as written, refused in one line saying what to add.
``DRY_RUN_REFUSED[profile] = what the error says`` for the recipe command of an example profile.
"""

from __future__ import annotations

TOKEN = "hf_refTOKENvalue0123456789abcdefgh"

# (name, env.toml text, profile -> expected values) in the forms the reference documents
EXAMPLES = {
    "quick start": ("""
        [wandb]
        project = "nemotron"
        entity = "my-team"

        [my-cluster]
        executor = "slurm"
        account = "my-account"
        partition = "batch"
        nodes = 2
        ntasks_per_node = 8
        gpus_per_node = 8
        mounts = ["/lustre:/lustre"]
        """, {"my-cluster": {"nodes": 2, "ntasks_per_node": 8, "gpus_per_node": 8, "mounts": ["/lustre:/lustre"]}}),
    "inheritance": ("""
        [base-slurm]
        executor = "slurm"
        account = "my-account"
        partition = "gpu"
        time = "04:00:00"

        [my-cluster]
        extends = "base-slurm"
        nodes = 4
        ntasks_per_node = 8
        gpus_per_node = 8

        [my-cluster-large]
        extends = "my-cluster"
        nodes = 16
        time = "08:00:00"
        """, {"my-cluster-large": {"nodes": 16, "time": "08:00:00", "account": "my-account", "gpus_per_node": 8},
              "my-cluster": {"nodes": 4, "time": "04:00:00"}}),
    "ssh tunnel": ("""
        [my-cluster]
        executor = "slurm"
        account = "my-account"
        partition = "gpu"
        nodes = 4
        tunnel = "ssh"
        host = "login.example.com"
        user = "someone"
        identity = "~/.ssh/id_rsa"
        remote_job_dir = "/lustre/someone/jobs"
        """, {"my-cluster": {"tunnel": "ssh", "host": "login.example.com", "user": "someone"}}),
    "partition overrides, no account": ("""
        [my-cluster]
        executor = "slurm"
        partition = "batch"
        run_partition = "interactive"
        batch_partition = "backfill"
        """, {"my-cluster": {"partition": "batch", "run_partition": "interactive"}}),
    "packagers": ("""
        [git]
        executor = "slurm"
        packager = "git"
        [pattern]
        executor = "slurm"
        packager = "pattern"
        packager_include_pattern = "src/**/*.py"
        [hybrid]
        executor = "slurm"
        packager = "hybrid"
        [none]
        executor = "slurm"
        packager = "none"
        """, {"git": {"packager": "git"}, "pattern": {"packager": "pattern"}, "hybrid": {},
              "none": {"packager": "none"}}),
    "git packager options": ("""
        [my-cluster]
        executor = "slurm"
        packager = "git"
        subpath = "src"
        include_submodules = false
        include_pattern = "nemotron/recipes/nano3/stage0_pretrain/config/*.yaml"
        """, {"my-cluster": {"packager": "git", "packager_subpath": "src", "include_submodules": False,
                             "packager_include_pattern": "nemotron/recipes/nano3/stage0_pretrain/config/*.yaml"}}),
    "package readme": ("""
        [base]
        executor = "slurm"
        account = "my-account"
        remote_job_dir = "/lustre/jobs"

        [dev]
        extends = "base"
        partition = "dev-gpu"
        nodes = 1

        [prod]
        extends = "base"
        partition = "prod-gpu"
        nodes = 8

        [wandb]
        entity = "my-team"
        project = "nemotron"

        [artifacts]
        backend = "file"
        root = "/lustre/artifacts"

        [cache]
        git_dir = "/lustre/git-cache"
        """, {"prod": {"nodes": 8, "remote_job_dir": "/lustre/jobs"}, "dev": {"partition": "dev-gpu"}}),
    "profile table keys": (f"""
        [all]
        executor = "slurm"
        packager = "git"
        nproc_per_node = 8
        nodes = 1
        container = "nvcr.io/nvidia/nemo:25.11"
        mounts = ["/host:/container"]
        account = "a"
        partition = "p"
        run_partition = "rp"
        batch_partition = "bp"
        time = "04:00:00"
        tunnel = "local"
        host = "h"
        user = "u"
        env_vars = ["A=1", "HF_TOKEN={TOKEN}"]
        dry_run = false
        detach = false
        """, {"all": {"gpus_per_node": 8, "container_image": "nvcr.io/nvidia/nemo:25.11",
                      "env_vars": {"A": "1", "HF_TOKEN": TOKEN}, "dry_run": False, "detach": False}}),
}


REFUSED = {
    # the reference's SSH example names no job directory on the cluster
    "ssh tunnel without remote_job_dir": ("""
        [my-cluster]
        executor = "slurm"
        account = "my-account"
        partition = "gpu"
        nodes = 4
        tunnel = "ssh"
        host = "login.example.com"
        user = "someone"
        identity = "~/.ssh/id_rsa"
        """, "my-cluster", 6, 'requires remote_job_dir, the job directory on the cluster\'s shared filesystem '
               "(there is no default: this machine cannot see that filesystem); the reference's SSH example needs "
               'this one more key: tunnel = "ssh", host = "login.example.com", user = "someone", '
               'identity = "~/.ssh/id_rsa", remote_job_dir = "/lustre/someone/nemotron-jobs"'),
}

# packager = "none": the code must already be on the cluster, and where is the profile's workdir
DRY_RUN_REFUSED = {"none": 'packager = "none" ships no code, so the job needs a working directory that already '
                           'holds it (the reference\'s example needs this one more key: executor = "slurm", '
                           'packager = "none", workdir = "/lustre/you/project"'}
