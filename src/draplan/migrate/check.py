"""The place for `--check` (issue 10, part 3): schedule the migrated pods on the cluster.

A check step gets the finished Migration (its `pods()` give each site's original and migrated
Pod, its `cluster` the input's Nodes, ResourceSlices and DeviceClasses, its `templates` the
ResourceClaimTemplates) and returns one row per site. The scheduler-backed step will live with
the scheduler; this module only fixes the contract so the CLI and the report need no change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from draplan.migrate.plan import Migration


@dataclass(frozen=True)
class CheckRow:
    """How one pod template fares before and after the migration."""

    site: str  # SiteResult.label
    before: str  # e.g. "fits node-a"
    after: str  # e.g. "fits node-b (different node)", "cannot fit"
    reason: str = ""  # the auditor's reason, when it cannot fit


class CheckStep(Protocol):
    """Schedules the original and migrated workloads; must not change the Migration."""

    def __call__(self, migration: Migration, /) -> list[CheckRow]: ...
