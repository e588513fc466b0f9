"""matchAttribute and distinctAttribute, checked as each device is added (dra-semantics §3.6)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from draplan.api.resource_v1 import DeviceConstraint
from draplan.cluster.devices import DeviceView

AttrValue = tuple[str, object]  # (type name, value)


@dataclass
class ClaimConstraint:
    """One constraint of a claim with its running state for the current search path."""

    attribute: str
    match: bool  # matchAttribute when True, distinctAttribute when False
    scope: frozenset[str]  # request names ("r" or "r/s"); empty = every request
    bound: AttrValue | None = None
    members: int = 0
    taken: Counter[AttrValue] = field(default_factory=Counter)
    # Upstream's own memory of a distinctAttribute: the last value per (parent) request, an
    # entry dropped whole on removal. It only decides when a device of an `All` request that
    # draplan rejects is a fatal error, as upstream's rejection would be.
    upstream: dict[str, AttrValue] = field(default_factory=dict)

    @classmethod
    def of(cls, con: DeviceConstraint) -> ClaimConstraint:
        if con.match_attribute is not None:
            return cls(con.match_attribute, True, frozenset(con.requests))
        return cls(con.distinct_attribute or "", False, frozenset(con.requests))

    def applies(self, parent: str, full: str) -> bool:
        # A constraint naming a parent request covers all of its subrequests.
        return not self.scope or parent in self.scope or full in self.scope

    def value(self, view: DeviceView) -> AttrValue | None:
        return view.attribute(self.attribute)

    def admits(self, view: DeviceView) -> bool:
        value = self.value(view)
        if value is None:
            return False
        if self.match:
            return self.bound is None or self.bound == value
        # Intended semantics: pairwise distinct over all devices in scope. Upstream (1.35-1.36)
        # keys its memory by request name and so accepts duplicates such as 1,2,1 within one
        # request (kubernetes#140438); draplan fixes that.
        return value not in self.taken

    def upstream_admits(self, view: DeviceView) -> bool:
        """`admits` as upstream decides it (kubernetes#140438 included)."""
        if self.match:
            return self.admits(view)
        value = self.value(view)
        return value is not None and value not in self.upstream.values()

    def add(self, view: DeviceView, request: str) -> None:
        value = self.value(view)
        assert value is not None
        if self.match:
            if self.members == 0:
                self.bound = value
            self.members += 1
        else:
            self.taken[value] += 1
            self.upstream[request] = value

    def remove(self, view: DeviceView, request: str) -> None:
        value = self.value(view)
        assert value is not None
        if self.match:
            self.members -= 1
            if self.members == 0:
                self.bound = None
        else:
            self.taken[value] -= 1
            if not self.taken[value]:
                del self.taken[value]
            self.upstream.pop(request, None)

    def state_key(self) -> object:
        if self.match:
            return self.bound
        return frozenset(self.taken), frozenset(self.upstream.items())
