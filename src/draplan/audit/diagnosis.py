"""One pending pod's verdict: its category, message, evidence and fix."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from draplan.api.core_v1 import Pod
from draplan.audit.fixes import Fix
from draplan.autoscaler.moves import label
from draplan.cluster.state import ObjectKey

Proposals = Callable[[Pod], Iterator[Fix]]


@dataclass
class Diagnosis:
    """One pod's category, message, evidence and fix. A fix that can be simulated is given as
    `proposals` (tried in order on the state after the pods ahead got theirs; the first that
    makes the pod schedulable is printed) with the message's `finding` and the remedy to
    name when none works (`otherwise`); advice that cannot be simulated (fix a claim, create
    gang members) is a `fix` marked verified false."""

    pod: ObjectKey
    category: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] | None = None
    devices: int = 0  # devices the pod asks for: how costly it is to leave it pending
    proposals: Proposals | None = None
    otherwise: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": label(self.pod),
            "category": self.category,
            "message": self.message,
            "evidence": self.evidence,
            "fix": self.fix,
        }
