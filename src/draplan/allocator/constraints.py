"""matchAttribute and distinctAttribute, checked as each device is added (dra-semantics §3.6).

With DRAListTypeAttributes (KEP-5491) values are sets, a scalar a set of one: matchAttribute
holds while the devices' sets (of one element type) share an element, distinctAttribute while
they are pairwise disjoint (upstream's constraint.go, 1.37). Both stay monotonic, so they are
still checked device by device; upstream keeps every device's value there, so the
kubernetes#140438 quirk of the scalar distinctAttribute does not arise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from draplan.api.resource_v1 import DeviceConstraint
from draplan.cluster.devices import DeviceView

AttrValue = tuple[str, object]  # (type name, value; a tuple for a list)
Element = tuple[str, object]  # (type name, one element)


def elements(value: AttrValue) -> frozenset[Element]:
    """The attribute as a set of typed elements (a scalar is a set of one)."""
    kind, raw = value
    items = raw if isinstance(raw, tuple) else (raw,)
    return frozenset((kind, item) for item in items)


@dataclass(slots=True)
class ClaimConstraint:
    """One constraint of a claim with its running state for the current search path."""

    attribute: str
    match: bool  # matchAttribute when True, distinctAttribute when False
    scope: frozenset[str]  # request names ("r" or "r/s"); empty = every request
    bound: AttrValue | None = None
    members: int = 0
    # A search builds one per constraint per call: plain dicts, not Counters, keep that cheap.
    taken: dict[AttrValue, int] = field(default_factory=dict)
    # Upstream's own memory of a distinctAttribute: the last value per (parent) request, an
    # entry dropped whole on removal. It only decides when a device of an `All` request that
    # draplan rejects is a fatal error, as upstream's rejection would be.
    upstream: dict[str, AttrValue] = field(default_factory=dict)
    sets: bool = False  # DRAListTypeAttributes: set semantics
    # Set semantics: matchAttribute's running intersection after each device (a stack, as
    # devices leave in the reverse order they came); distinctAttribute's elements in use.
    common: list[frozenset[Element]] = field(default_factory=list)
    used: dict[Element, int] = field(default_factory=dict)

    @classmethod
    def of(cls, con: DeviceConstraint, sets: bool = False) -> ClaimConstraint:
        if con.match_attribute is not None:
            return cls(con.match_attribute, True, frozenset(con.requests), sets=sets)
        return cls(con.distinct_attribute or "", False, frozenset(con.requests), sets=sets)

    @property
    def groups_by_value(self) -> bool:
        """Whether devices that can go together have one value (so the search may group
        candidates by it): always for matchAttribute, except with list values."""
        return self.match and not self.sets

    def applies(self, parent: str, full: str) -> bool:
        # A constraint naming a parent request covers all of its subrequests.
        return not self.scope or parent in self.scope or full in self.scope

    def value(self, view: DeviceView) -> AttrValue | None:
        return view.attribute(self.attribute)

    def admits(self, view: DeviceView) -> bool:
        value = self.value(view)
        if value is None:
            return False
        if self.sets:
            mine = elements(value)
            if self.match:
                return not self.common or bool(self.common[-1] & mine)
            return not any(e in self.used for e in mine)
        if self.match:
            return self.bound is None or self.bound == value
        # Intended semantics: pairwise distinct over all devices in scope. Upstream (1.35-1.36)
        # keys its memory by request name and so accepts duplicates such as 1,2,1 within one
        # request (kubernetes#140438); draplan fixes that.
        return value not in self.taken

    def upstream_admits(self, view: DeviceView) -> bool:
        """`admits` as upstream decides it (kubernetes#140438 included)."""
        if self.match or self.sets:
            return self.admits(view)
        value = self.value(view)
        return value is not None and value not in self.upstream.values()

    def add(self, view: DeviceView, request: str) -> None:
        value = self.value(view)
        assert value is not None
        if self.sets:
            mine = elements(value)
            if self.match:
                self.common.append(self.common[-1] & mine if self.common else mine)
            else:
                for e in mine:
                    self.used[e] = self.used.get(e, 0) + 1
            return
        if self.match:
            if self.members == 0:
                self.bound = value
            self.members += 1
        else:
            self.taken[value] = self.taken.get(value, 0) + 1
            self.upstream[request] = value

    def remove(self, view: DeviceView, request: str) -> None:
        value = self.value(view)
        assert value is not None
        if self.sets:
            if self.match:
                self.common.pop()
            else:
                for e in elements(value):
                    left = self.used[e] - 1
                    if left:
                        self.used[e] = left
                    else:
                        del self.used[e]
            return
        if self.match:
            self.members -= 1
            if self.members == 0:
                self.bound = None
        else:
            left = self.taken[value] - 1
            if left:
                self.taken[value] = left
            else:
                del self.taken[value]
            self.upstream.pop(request, None)

    def state_key(self) -> object:
        if self.sets:
            return self.common[-1] if self.common else frozenset(self.used)
        if self.match:
            return self.bound
        return frozenset(self.taken), frozenset(self.upstream.items())
