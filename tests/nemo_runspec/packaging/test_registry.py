"""Packaging plans and progress callbacks by id (packaging/_registry.py): what a packager rebuilt
by nemo-run from its fields finds again."""

from __future__ import annotations

from nemo_runspec.packaging._registry import plan_for, progress_for, register
from nemo_runspec.packaging.manifest import PackagingPlan


def test_a_plan_and_its_progress_are_found_by_their_id():
    plan, seen = PackagingPlan(kind="git", commit="abc"), []
    pid = register(plan, seen.append)
    assert plan_for(pid) is plan
    progress_for(pid)("event")
    assert seen == ["event"]


def test_each_registration_has_its_own_id_and_unknown_ids_find_nothing():
    a, b = register(PackagingPlan(kind="code")), register(PackagingPlan(kind="code"))
    assert a != b and plan_for(a) is not plan_for(b)
    assert progress_for(a) is None
    assert plan_for("nope") is None and progress_for("nope") is None
