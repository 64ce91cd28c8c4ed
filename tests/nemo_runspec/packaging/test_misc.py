"""Import cost, progress reporting, cache pruning and plan serialisation of nemo_runspec.packaging."""

from __future__ import annotations

from tests.import_probes import imported_after


def test_import_is_cheap_and_does_not_pull_nemo_run():
    out = imported_after(
        "import nemo_runspec.packaging as p\np.PackagingPlan; p.package_code; p.build_packager",
        ("nemo_run", "ray", "torch", "wandb"),
    )
    assert out.stdout.strip() == ""


