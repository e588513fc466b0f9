"""DefaultPreemptionArgs (kubescheduler.config.k8s.io/v1): how many candidate nodes the dry
run finds before one is chosen, with kube-scheduler's defaults (v1 defaults.go;
scheduler.config validates them as ValidateDefaultPreemptionArgs)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100
    # draplan's own, off by default: in the dry run a victim's devices count as free once no
    # other pod reserves their claims (KEP-5690, DRA preemption). kube-scheduler 1.36 and 1.37
    # cannot: DynamicResources has no PreFilter extensions, so removing a victim from the
    # simulated node leaves its devices allocated.
    free_devices: bool = False

    def candidates(self, potential: int) -> int:
        """calculateNumCandidates: a share of the potential nodes, at least the absolute
        number, never more than there are."""
        wanted = potential * self.min_candidate_nodes_percentage // 100
        return min(max(wanted, self.min_candidate_nodes_absolute), potential)
