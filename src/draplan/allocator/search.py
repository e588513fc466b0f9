"""The search: a complete depth-first search over combinations, with counting, grouping by
matchAttribute value, and a memory of failed sub-states (dra-semantics §3.3-§3.11)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, NoReturn

from draplan.allocator.capacity import consumption
from draplan.allocator.compatibility import compatible
from draplan.allocator.constraints import ClaimConstraint
from draplan.allocator.diagnose import constraint_groups, diagnose, request_counts
from draplan.allocator.matching import (
    FREE_ONLY,
    HIDDEN,
    LEDGERS,
    Matched,
    Mine,
    matched,
    mine_error,
)
from draplan.allocator.requests import (
    MAX_DEVICES_PER_CLAIM,
    RequestSlot,
    RequestSpec,
    build_slots,
    claim_error,
    claim_label,
)
from draplan.allocator.result import Pick, allocated_claim
from draplan.allocator.taints import taint_blocks
from draplan.allocator.types import AllocationError, Options, Outcome, Reason
from draplan.api.core_v1 import Node
from draplan.api.errors import BadInput
from draplan.api.resource_v1 import ResourceClaim
from draplan.cluster.devices import CounterKey, DeviceID, DeviceView, Pool, PoolID
from draplan.cluster.state import ClusterState


class _Timeout(Exception):
    pass


class _MaxSize(Exception):
    """Upstream's errAllocationResultMaxSizeExceeded: unwinds to the nearest firstAvailable
    request or the claim's start."""


class _PairwiseOnly(Exception):
    """A device of an `All` set that only draplan's pairwise distinctAttribute rejects: whether
    that is fatal depends on the rest of the set, as upstream goes on adding it."""


# A pool's candidates for a request, the ids of its FREE_ONLY ones, and its mines.
_Mines = tuple[tuple[DeviceID, Mine], ...]
TightKey = tuple[int, float, int]
# ... the mines of the pool's devices the node does not see (HIDDEN), and with `tight` each
# candidate's key (read from the same ledgers).
PoolCandidates = tuple[tuple[DeviceView, ...], frozenset[int], _Mines, _Mines, tuple[TightKey, ...]]
# Per (pool, request shape, gates, mine rule): the pool, the nodes its devices are bound to,
# the version of their ledgers, and the candidates under those ledgers.
_CANDIDATES: dict[
    tuple[int, int, int, str], tuple[Pool, tuple[str, ...], object, PoolCandidates]
] = {}
_CANDIDATES_SIZE = 1 << 16
# Per pool: the devices upstream's search walks in it (`Search._reached`).
_REACHED: dict[int, tuple[Pool, tuple[DeviceView, ...]]] = {}

# What the search does with a device whose selector fails at run time (a "mine"). Upstream
# evaluates selectors lazily, as its search reaches each device (dra-semantics §2.3), so the
# error is fatal only when the search gets there.
SKIP_MINES = "skip"  # leave them out: find an answer that never needs their verdict
MATCH_MINES = "match"  # count them in: could their verdict change the answer?
RAISE_MINES = "raise"  # upstream's own search order: fatal when reached


class Search:
    """One Allocate call: claims on one node against the cluster's ledgers."""

    def __init__(
        self,
        state: ClusterState,
        node: Node,
        claims: Sequence[ResourceClaim],
        options: Options,
        mines: str = SKIP_MINES,
    ) -> None:
        self.state = state
        self.mine_rule = mines
        enabled = state.features.enabled
        self.partitionable = "DRAPartitionableDevices" in enabled
        self.taints = "DRADeviceTaints" in enabled
        self.compatibility = "DRADeviceCompatibilityGroups" in enabled
        self.fractional = "DRAFractionalCapacityRange" in enabled
        # Per (pool, counter set): the compatibilityGroups of each device on it, allocated
        # before (computed when first needed) and picked here (appended and popped).
        self.on_counter_set: dict[tuple[PoolID, str], list[frozenset[str]]] = {}
        # Per (sub)request, in device order: the selector error of each mine.
        self.mines: dict[int, dict[DeviceID, AllocationError]] = {}
        # The same for devices the node does not see: they matter only in upstream's order.
        self.hidden_mines: dict[int, dict[DeviceID, AllocationError]] = {}
        self.node = node
        self.claims = tuple(claims)
        self.options = options
        # draplan's own order, the candidates sorted by `_tight_key` (a preference replaces it).
        self.tight = options.device_order == "tight" and options.prefer is None
        self.pools = state.pools_for_node(node)
        self.pool_by_id: dict[PoolID, Pool] = {p.id: p for p in self.pools}
        self.slots, self.claim_starts = build_slots(self.claims, state.device_classes)
        sets = "DRAListTypeAttributes" in enabled
        self.constraints = [
            [ClaimConstraint.of(c, sets) for c in constraints] if constraints else []
            for constraints in (claim.spec.devices.constraints for claim in self.claims)
        ]
        self.alloc_excl: dict[DeviceID, list[int]] = {}
        self.alloc_cap: dict[DeviceID, dict[str, int]] = {}
        self.alloc_shares: dict[DeviceID, int] = {}
        self.counters_used: dict[tuple[PoolID, CounterKey], int] = {}
        self.picks: list[list[Pick]] = [[] for _ in self.claims]
        self.failed: set[object] = set()
        self.scoped: dict[int, list[ClaimConstraint]] = {}
        # Per (sub)request, the ids of its candidates of FREE_ONLY kind.
        self.plain: dict[int, frozenset[int]] = {}
        self.steps = 0
        self.deadline = time.perf_counter() + options.timeout_seconds
        self.candidates: dict[int, list[DeviceView]] = {}
        self.all_sets: dict[int, list[DeviceView]] = {}
        self.overdrawn = self._overdrawn_pools()
        self._free_by_group: Counter[tuple[PoolID, object]] | None = None

    # --- preparation ---------------------------------------------------------------------

    def _overdrawn_pools(self) -> set[PoolID]:
        # Upstream requires every counter of the pool to stay >= 0, so a pool already
        # over-consumed (published counters shrank) admits no counter-consuming device.
        out = set()
        for pool in self.pools:
            if not pool.counters:
                continue
            for ckey, total in pool.counters.items():
                if self.state.counter_used(pool.id, ckey) > total:
                    out.add(pool.id)
        return out

    def matched(self, pool: Pool, spec: RequestSpec) -> Matched:
        """The pool's devices `spec`'s selectors pass or fail on (`matching.matched`)."""
        reached = self._reached(pool)
        return matched(pool, spec, reached, self.partitionable, self.taints, self.fractional)

    def _reached(self, pool: Pool) -> tuple[DeviceView, ...]:
        """The devices upstream's search walks in `pool`: every device of the slices the node
        sees, in slice and publish order, with those a perDeviceNodeSelection slice binds to
        other nodes (dra-semantics §3.1, §3.4); `pool.devices` when there are none."""
        hit = _REACHED.get(id(pool))
        if hit is not None and hit[0] is pool:
            return hit[1]
        names = sorted({v.slice_name for v in pool.devices})
        reached = pool.devices
        if any(self.state.slices[n].spec.per_device_node_selection for n in names):
            every = tuple(v for n in names for v in self.state.slice_devices(n))
            if len(every) != len(pool.devices):
                reached = every
        if len(_REACHED) >= _CANDIDATES_SIZE:
            _REACHED.clear()
        _REACHED[id(pool)] = (pool, reached)
        return reached

    def first_mine(self) -> AllocationError:
        """The error of the first mine in search order (requests, then devices)."""
        return next(
            err
            for slot in self.slots
            for spec in slot.alternatives
            for err in self.mines.get(id(spec), {}).values()
        )

    def _static_fit(self, spec: RequestSpec, view: DeviceView) -> dict[str, int] | bool | None:
        """False if the device can never serve `spec` in this call; else its consumption."""
        if not spec.admin_access and self.state.in_use(view.id):
            return False
        if view.consumes and not self.partitionable:
            return False
        if self.taints and taint_blocks(view, spec.tolerations):
            return False
        consumed = consumption(view, spec.capacity, self.fractional)
        if consumed is None:
            return False
        shared = self.state.shared_use(view.id) if view.multi else None
        for name, amount in consumed.items():
            base = shared.consumed.get(name, 0) if shared is not None else 0
            if base + amount > view.capacity[name]:
                return False
        if view.consumes and not (view.multi and shared is not None):
            if view.pool_id in self.overdrawn:
                return False
            pool = self.pool_by_id[view.pool_id]
            for ckey, amount in view.consumes:
                if self.state.counter_used(view.pool_id, ckey) + amount > pool.counters[ckey]:
                    return False
        return consumed if view.multi else None

    def prepare(self) -> None:
        """Candidate lists per (sub)request, fatal checks, and the claim-size limit."""
        minimum = 0
        for pos, slot in enumerate(self.slots):
            for spec in slot.alternatives:
                if spec.all_mode:
                    self.all_sets[id(spec)] = self._all_set(spec)
                else:
                    self.candidates[id(spec)] = self._ordered(spec, self._exact_candidates(spec))
            minimum += min(self._needed(s) for s in slot.alternatives)
            if pos + 1 in self.claim_starts or pos + 1 == len(self.slots):
                # Upstream checks each claim's size after its requests, before the next
                # claim's (Allocate): a later claim's `All` set is not evaluated then.
                if minimum > MAX_DEVICES_PER_CLAIM:
                    raise claim_error(
                        self.claims[slot.claim_index],
                        f"number of requested devices {minimum} exceeds the claim limit of "
                        f"{MAX_DEVICES_PER_CLAIM}",
                        "spec.devices.requests",
                    )
                minimum = 0

    def _needed(self, spec: RequestSpec) -> int:
        return len(self.all_sets[id(spec)]) if spec.all_mode else spec.count

    def _exact_candidates(self, spec: RequestSpec) -> list[DeviceView]:
        """The candidates of every pool, in pool order, or in `tight` order."""
        out: list[DeviceView] = []
        keys: list[TightKey] = []
        plains: list[frozenset[int]] = []
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            views, plain, mines, hidden, tight = self._pool_candidates(pool, spec)
            out.extend(views)
            keys.extend(tight)
            plains.append(plain)
            claim = self.claims[spec.claim_index]
            for found, raw in ((self.mines, mines), (self.hidden_mines, hidden)):
                if raw:
                    errors = {vid: mine_error(spec, claim, m) for vid, m in raw}
                    found.setdefault(id(spec), {}).update(errors)
        self.plain[id(spec)] = plains[0] if len(plains) == 1 else frozenset().union(*plains)
        if keys and len(out) > 1:
            order = sorted(range(len(out)), key=keys.__getitem__)  # stable: pool order on ties
            out = [out[i] for i in order]
        return out

    def _pool_candidates(self, pool: Pool, spec: RequestSpec) -> PoolCandidates:
        """One pool's candidates for `spec` in publish order, the FREE_ONLY ones among them
        and its mines, kept while the ledgers of the pool's devices stay (their nodes'
        versions name them)."""
        flags = self.partitionable | self.taints << 1 | self.fractional << 2 | self.tight << 3
        key = (id(pool), spec.shape, flags, self.mine_rule)
        hit = _CANDIDATES.get(key)
        if hit is not None and hit[0] is pool:
            bound = hit[1]
            version = self.state.ledgers_version(bound)
            if hit[2] == version:
                return hit[3]
        else:
            bound = pool.bound_nodes()
            version = self.state.ledgers_version(bound)
        views = []
        plain = set()
        mines = []
        hidden: list[tuple[DeviceID, Mine]] = []
        taken = self.state.exclusive
        admin = spec.admin_access
        for view, mine, kind in self.matched(pool, spec):
            if not admin and view.id in taken:
                continue  # upstream skips in-use devices before evaluating selectors
            if mine is not None:
                if kind == HIDDEN:
                    hidden.append((view.id, mine))
                    if self.mine_rule == RAISE_MINES:
                        views.append(view)
                    continue
                mines.append((view.id, mine))
                if self.mine_rule == SKIP_MINES:
                    continue
                if self.mine_rule == RAISE_MINES:
                    views.append(view)  # upstream evaluates before any other check
                    continue
            if kind == FREE_ONLY:
                plain.add(id(view))
                views.append(view)
            elif kind == LEDGERS and self._static_fit(spec, view) is not False:
                views.append(view)
        tight = tuple(self._tight_key(v) for v in views) if self.tight else ()
        found = (tuple(views), frozenset(plain), tuple(mines), tuple(hidden), tight)
        if len(_CANDIDATES) >= _CANDIDATES_SIZE:
            _CANDIDATES.clear()
        _CANDIDATES[key] = (pool, bound, version, found)
        return found

    def _all_set(self, spec: RequestSpec) -> list[DeviceView]:
        claim = self.claims[spec.claim_index]
        out = []
        for pool in self.pools:
            state = "being updated" if pool.incomplete else "invalid" if pool.invalid else ""
            if state:
                raise spec.error(
                    claim,
                    f"asks for all devices, but resource pool {pool.id[0]}/{pool.id[1]} is "
                    f"currently {state}",
                )
            for view, mine, kind in self.matched(pool, spec):
                if mine is not None:  # upstream evaluates the whole set first
                    raise mine_error(spec, claim, mine)
                if kind == HIDDEN:
                    continue
                consumed = consumption(view, spec.capacity, self.fractional)
                if consumed is None:
                    continue
                shared = self.state.shared_use(view.id) if view.multi else None
                if any(
                    (shared.consumed.get(k, 0) if shared else 0) + v > view.capacity[k]
                    for k, v in consumed.items()
                ):
                    continue
                out.append(view)
        return out

    def _ordered(self, spec: RequestSpec, views: list[DeviceView]) -> list[DeviceView]:
        prefer = self.options.prefer
        if prefer is not None and len(views) > 1:
            claim = self.claims[spec.claim_index]
            ordered = list(prefer.order(self.state, self.node, claim, spec.name, views))
            if len(ordered) != len(views) or {id(v) for v in ordered} != {id(v) for v in views}:
                raise ValueError(
                    f"{claim_label(claim)} {spec.path}: the device preference changed the set"
                )
            return ordered
        return views  # in pool order, or already in `tight` order

    def _tight_key(self, view: DeviceView) -> TightKey:
        """Keep whole groups and whole GPUs free: prefer devices of already-used GPUs and
        groups with fewer free devices, and the smallest partition."""
        if view.multi:
            used = 0 if self.state.shared_use(view.id) is not None else 1
            return (used, -self._shared_load(view), 0)
        touched = 1
        share = 0.0
        if view.consumes:
            pool = self.pool_by_id[view.pool_id]
            for ckey, amount in view.consumes:
                total = pool.counters.get(ckey) or 1
                share += amount / total
                if self.state.counter_used(view.pool_id, ckey):
                    touched = 0
        return (touched, share, self._group_free(view))

    def _shared_load(self, view: DeviceView) -> float:
        shared = self.state.shared_use(view.id)
        if shared is None or not view.capacity:
            return 0.0
        return max(shared.consumed.get(k, 0) / (v or 1) for k, v in view.capacity.items())

    def _group_free(self, view: DeviceView) -> int:
        key = view.topology
        if key is None:
            return 0
        if self._free_by_group is None:
            counts: Counter[tuple[PoolID, object]] = Counter()
            for pool in self.pools:
                for v in pool.devices:
                    if v.topology is not None and not self.state.in_use(v.id):
                        counts[(pool.id, v.topology)] += 1
            self._free_by_group = counts
        return self._free_by_group[(view.pool_id, key)]

    # --- one device ----------------------------------------------------------------------

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > self.options.step_budget:
            raise _Timeout
        if not self.steps & 511 and time.perf_counter() > self.deadline:
            raise _Timeout

    def _busy(self, spec: RequestSpec, view: DeviceView) -> bool:
        holders = self.alloc_excl.get(view.id)
        if spec.admin_access:
            # Admin access ignores other claims' use, never its own claim's (§3.8).
            return not view.multi and holders is not None and spec.claim_index in holders
        # An exact request's candidates were taken free of the ledgers; an `All` set was not.
        return bool(holders) or (spec.all_mode and self.state.in_use(view.id))

    def add(
        self, spec: RequestSpec, view: DeviceView, must: bool = False, upstream: bool = False
    ) -> Pick | None:
        """Tentatively allocate `view` for `spec`; None if it does not fit here. `upstream`
        checks constraints as upstream does (kubernetes#140438 included)."""
        self._tick()
        if self._busy(spec, view):
            return None
        if id(view) in self.plain.get(id(spec), ()):
            return self._add_plain(spec, view, must, upstream)
        dev = view.id
        multi = view.multi
        already_shared = multi and (
            self.state.shared_use(dev) is not None or self.alloc_shares.get(dev, 0) > 0
        )
        use_counters = bool(view.consumes) and not already_shared
        if view.consumes and not self.partitionable:
            return None  # upstream's allocateDevice step 3 (dra-semantics §3.5)
        if use_counters:
            if view.pool_id in self.overdrawn:
                return None
            pool = self.pool_by_id[view.pool_id]
            for ckey, amount in view.consumes:
                k = (view.pool_id, ckey)
                if (
                    self.state.counter_used(view.pool_id, ckey)
                    + self.counters_used.get(k, 0)
                    + amount
                    > pool.counters[ckey]
                ):
                    return None
        if self.taints and taint_blocks(view, spec.tolerations):
            return None
        if self.compatibility and not self._compatible(view):
            return None
        cons = self._scope(spec)
        for c in cons:
            if not (c.upstream_admits(view) if upstream else c.admits(view)):
                if must:
                    self._refuse_whole(spec, view, cons, upstream)
                return None
        consumed = consumption(view, spec.capacity, self.fractional)
        if consumed is None:
            return None
        shared = self.state.shared_use(dev) if multi else None
        mine = self.alloc_cap.get(dev, {})
        for name, amount in consumed.items():
            base = (shared.consumed.get(name, 0) if shared else 0) + mine.get(name, 0)
            if base + amount > view.capacity[name]:
                return None
        # Commit the tentative allocation.
        if self.compatibility:
            for cc in view.device.consumes_counters:
                members = self.on_counter_set[(view.pool_id, cc.counter_set)]
                members.append(frozenset(cc.compatibility_groups))
        if use_counters:
            for ckey, amount in view.consumes:
                k = (view.pool_id, ckey)
                self.counters_used[k] = self.counters_used.get(k, 0) + amount
        for c in cons:
            c.add(view, spec.parent)
        if multi:
            self.alloc_shares[dev] = self.alloc_shares.get(dev, 0) + 1
            self.alloc_cap[dev] = {k: mine.get(k, 0) + v for k, v in consumed.items()}
        else:
            self.alloc_excl.setdefault(dev, []).append(spec.claim_index)
        pick = Pick(spec, view, consumed if multi else None)
        self.picks[spec.claim_index].append(pick)
        return pick

    def _add_plain(
        self, spec: RequestSpec, view: DeviceView, must: bool, upstream: bool
    ) -> Pick | None:
        """`add` for a device of `FREE_ONLY` kind: exclusive, no counters, its taints and
        capacity already checked for this request; only the constraints are left."""
        cons = self._scope(spec)
        for c in cons:
            if not (c.upstream_admits(view) if upstream else c.admits(view)):
                if must:
                    self._refuse_whole(spec, view, cons, upstream)
                return None
        for c in cons:
            c.add(view, spec.parent)
        self.alloc_excl.setdefault(view.id, []).append(spec.claim_index)
        pick = Pick(spec, view, None)
        self.picks[spec.claim_index].append(pick)
        return pick

    def _refuse_whole(
        self, spec: RequestSpec, view: DeviceView, cons: list[ClaimConstraint], upstream: bool
    ) -> NoReturn:
        """A device an `All` request must have fails a constraint: upstream's fatal error, or
        _PairwiseOnly where only draplan's pairwise distinctAttribute refuses it."""
        if upstream or not all(k.upstream_admits(view) for k in cons):
            dev = view.id
            raise spec.error(
                self.claims[spec.claim_index],
                f"cannot add device {dev[0]}/{dev[1]}/{dev[2]} "
                "because a claim constraint would not be satisfied",
            )
        raise _PairwiseOnly

    def remove(self, pick: Pick) -> None:
        spec, view = pick.spec, pick.view
        dev = view.id
        self.picks[spec.claim_index].pop()
        if view.multi:
            n = self.alloc_shares[dev] - 1
            mine = self.alloc_cap[dev]
            assert pick.consumed is not None
            if n:
                self.alloc_shares[dev] = n
                self.alloc_cap[dev] = {k: mine[k] - v for k, v in pick.consumed.items()}
            else:
                del self.alloc_shares[dev]
                del self.alloc_cap[dev]
            released = n == 0 and self.state.shared_use(dev) is None
        else:
            holders = self.alloc_excl[dev]
            holders.pop()
            if not holders:
                del self.alloc_excl[dev]
            released = True
        if released and view.consumes:
            # Release the counters too: upstream 1.35 leaked them on rejection
            # (kubernetes#140436); draplan never takes them before all checks pass.
            for ckey, amount in view.consumes:
                k = (view.pool_id, ckey)
                self.counters_used[k] -= amount
        for c in self._scope(spec):
            c.remove(view, spec.parent)
        if self.compatibility:
            for cc in view.device.consumes_counters:
                self.on_counter_set[(view.pool_id, cc.counter_set)].pop()

    def _compatible(self, view: DeviceView) -> bool:
        for cc in view.device.consumes_counters:
            key = (view.pool_id, cc.counter_set)
            members = self.on_counter_set.get(key)
            if members is None:
                members = self.on_counter_set[key] = self._allocated_groups(key)
            if not compatible([*members, frozenset(cc.compatibility_groups)]):
                return False
        return True

    def _allocated_groups(self, key: tuple[PoolID, str]) -> list[frozenset[str]]:
        """The groups of the devices on a counter set that the cluster has allocated."""
        pool = self.pool_by_id.get(key[0])
        out: list[frozenset[str]] = []
        for v in pool.devices if pool is not None else ():
            if self.state.in_use(v.id) or self.state.shared_use(v.id) is not None:
                out.extend(
                    frozenset(cc.compatibility_groups)
                    for cc in v.device.consumes_counters
                    if cc.counter_set == key[1]
                )
        return out

    # --- the search ----------------------------------------------------------------------

    def _memo_key(self, pos: int) -> object:
        claim_index = self.slots[pos].claim_index if pos < len(self.slots) else -1
        return (
            pos,
            frozenset((d, tuple(h)) for d, h in self.alloc_excl.items()),
            frozenset((d, tuple(sorted(c.items()))) for d, c in self.alloc_cap.items()),
            tuple(tuple(c.state_key() for c in cs) for cs in self.constraints),
            len(self.picks[claim_index]) if claim_index >= 0 else 0,
        )

    def run(self, pos: int = 0) -> bool:
        if pos == len(self.slots):
            return True
        slot = self.slots[pos]
        if pos not in self.claim_starts:
            return self._run_slot(pos, slot)
        try:
            return self._run_slot(pos, slot)
        except _MaxSize:
            # Upstream swallows errAllocationResultMaxSizeExceeded where one claim ends and
            # the next begins (allocateOne): the previous claim's other choices go on.
            self._unwind(slot.claim_index, 0)
            return False

    def _unwind(self, claim_index: int, depth: int) -> None:
        """Take back this claim's picks above `depth` (those a _MaxSize skipped)."""
        picks = self.picks[claim_index]
        while len(picks) > depth:
            self.remove(picks[-1])

    def _run_slot(self, pos: int, slot: RequestSlot) -> bool:
        # Upstream's order has no memory of failed states; it only has to reach the same
        # devices as upstream does.
        # The first request starts from the one initial state: nothing to remember there.
        key = None if pos == 0 or self.mine_rule == RAISE_MINES else self._memo_key(pos)
        if key in self.failed:
            return False
        exceeded = True
        depth = len(self.picks[slot.claim_index])
        for spec in slot.alternatives:
            needed = self._needed(spec)
            if len(self.picks[slot.claim_index]) + needed > MAX_DEVICES_PER_CLAIM:
                continue  # errAllocationResultMaxSizeExceeded: try the next subrequest
            try:
                if self._try(pos, spec):
                    return True
            except _MaxSize:
                if not slot.first_available:
                    raise
                self._unwind(slot.claim_index, depth)
                continue  # a later request ran over: this subrequest took too many
            exceeded = False
        if exceeded:
            # Every alternative runs over the claim's 32 devices with what the claim holds.
            # Upstream returns errAllocationResultMaxSizeExceeded up to the nearest
            # firstAvailable request (or the claim's start) without trying other devices for
            # the requests in between: their number of devices is the same whichever they are.
            raise _MaxSize
        if key is not None:
            self.failed.add(key)
        return False

    def _try(self, pos: int, spec: RequestSpec) -> bool:
        if spec.all_mode:
            return self._try_all(pos, spec)
        if self.mine_rule == RAISE_MINES:
            return self._scan(pos, spec, 0, spec.count)
        cons = self._scope(spec)
        cands = self.candidates[id(spec)]
        if self.alloc_excl or spec.admin_access:
            busy = self._busy
            cands = [v for v in cands if not busy(spec, v)]
        k = spec.count
        # Unbound matchAttribute constraints admit any device that has the attribute; the
        # values the device would bind them to group the candidates.
        unbound: list[ClaimConstraint] = []
        others: list[ClaimConstraint] = []
        for c in cons:
            (unbound if k > 1 and c.groups_by_value and c.bound is None else others).append(c)
        keys: list[tuple[object, ...]] = []
        groups: dict[object, list[DeviceView]] = {}
        if unbound:
            kept = []
            attrs = [c.attribute for c in unbound]
            one = attrs[0] if len(attrs) == 1 else None  # the usual case: no generator per device
            for v in cands:
                key = (v.attribute(one),) if one is not None else tuple(map(v.attribute, attrs))
                if None in key or (others and not all(c.admits(v) for c in others)):
                    continue
                kept.append(v)
                keys.append(key)
                groups.setdefault(key, []).append(v)
            cands = kept
        elif cons:
            cands = [v for v in cands if all(c.admits(v) for c in cons)]
        if len(cands) < k:
            return False
        distinct = [c for c in cons if not c.match]
        if distinct and len({tuple(c.value(v) for c in distinct) for v in cands}) < k:
            return False
        if not unbound:
            return self._combine(pos, spec, cands, 0, k)
        fitting = [g for g in groups.values() if len(g) >= k]
        if self.options.device_order == "tight":
            fitting.sort(key=len)  # best fit: the smallest group that holds the request
            return any(self._combine(pos, spec, g, 0, k) for g in fitting)
        if not fitting:
            return False
        return self._combine_grouped(pos, spec, cands, keys, groups, k)

    def _combine_grouped(
        self,
        pos: int,
        spec: RequestSpec,
        cands: list[DeviceView],
        keys: list[tuple[object, ...]],
        groups: dict[object, list[DeviceView]],
        k: int,
    ) -> bool:
        """Upstream's order (combinations in device order) where the first device binds the
        request's matchAttribute values: the rest come from the devices after it with the
        same values, and a first device whose group has too few after it is passed over
        (upstream would try the devices after it and have each refused by the constraint)."""
        rank: dict[int, int] = {}
        for g in groups.values():
            for j, v in enumerate(g):
                rank[id(v)] = j
        for key, v in zip(keys, cands, strict=True):
            group = groups[key]
            j = rank[id(v)]
            if len(group) - j < k:
                continue
            pick = self.add(spec, v)
            if pick is None:
                continue
            if self._combine(pos, spec, group, j + 1, k - 1):
                return True
            self.remove(pick)
        return False

    def _scope(self, spec: RequestSpec) -> list[ClaimConstraint]:
        """The claim's constraints that apply to `spec`'s devices."""
        cons = self.scoped.get(id(spec))
        if cons is None:
            cons = self.scoped[id(spec)] = [
                c for c in self.constraints[spec.claim_index] if c.applies(spec.parent, spec.name)
            ]
        return cons

    def _combine(
        self, pos: int, spec: RequestSpec, cands: list[DeviceView], start: int, k: int
    ) -> bool:
        """Choose k more devices from cands[start:] (combinations, not orderings)."""
        if k == 0:
            return self.run(pos + 1)
        for i in range(start, len(cands) - k + 1):
            pick = self.add(spec, cands[i])
            if pick is None:
                continue
            if self._combine(pos, spec, cands, i + 1, k - 1):
                return True
            self.remove(pick)
        return False

    def _scan(self, pos: int, spec: RequestSpec, start: int, k: int) -> bool:
        """Upstream's allocateOne for one request (§3.3): devices in publish order, each
        next device after the previous one (1.36's start location), a mine fatal when
        reached. No pruning, so exactly the devices upstream evaluates are reached."""
        if k == 0:
            return self.run(pos + 1)
        cands = self.candidates[id(spec)]
        mines = {**self.mines.get(id(spec), {}), **self.hidden_mines.get(id(spec), {})}
        for i in range(start, len(cands)):
            view = cands[i]
            if self._busy(spec, view):
                continue
            mine = mines.get(view.id)
            if mine is not None:
                raise mine.with_traceback(None)
            pick = self.add(spec, view)
            if pick is None:
                continue
            if self._scan(pos, spec, i + 1, k - 1):
                return True
            self.remove(pick)
        return False

    def _try_all(self, pos: int, spec: RequestSpec) -> bool:
        devices = self.all_sets[id(spec)]
        if not devices:
            return False  # "All" needs at least one device (since 1.33)
        taken: list[Pick] = []
        try:
            for view in devices:
                pick = self.add(spec, view, must=True)
                if pick is None:
                    break
                taken.append(pick)
            else:
                if self.run(pos + 1):
                    return True
        except _PairwiseOnly:
            # Not an allocation draplan accepts. Upstream adds the device and goes on through
            # the set, which can still end in its fatal error: replay the set its way.
            for p in reversed(taken):
                self.remove(p)
            taken = []
            for view in devices:
                pick = self.add(spec, view, must=True, upstream=True)
                if pick is None:
                    break
                taken.append(pick)
        for p in reversed(taken):
            self.remove(p)
        return False


def allocate(
    state: ClusterState,
    node: Node,
    claims: Sequence[ResourceClaim],
    options: Options | None = None,
) -> Outcome:
    """Allocate all `claims` together on `node`, or explain why not. Raises AllocationError for
    input that is wrong on every node (unknown class, bad CEL, over 32 devices...) and for a
    selector that fails at run time on a device the answer depends on.

    Which answers depend on such a device: with `first-fit` (and no placement preference),
    exactly those where upstream's search reaches it. With `tight`, those where leaving the
    device out finds no allocation but counting it in would: the error is raised only where
    every valid answer has to evaluate the failing device."""
    try:
        return _allocate(state, node, claims, options or Options())
    except AllocationError as err:
        raise _located(state, claims, err) from None


def _located(
    state: ClusterState, claims: Sequence[ResourceClaim], err: AllocationError
) -> BadInput:
    """The error with the file of the object it names; a claim made from a template is
    reported as the template's (the claim itself is in no file)."""
    if err.source:
        return err
    if err.kind == "DeviceClass":
        dc = state.device_classes.get(err.name)
        return err.located(source=state.source_of(dc)) if dc is not None else err
    claim = next((c for c in claims if claim_label(c) == err.name), None)
    if claim is None:
        return err
    source = state.source_of(claim)
    if source:
        return err.located(source=source)
    for (ns, name), template in state.claim_templates.items():
        if template.spec.spec is claim.spec:
            return AllocationError(
                err.message,
                source=state.source_of(template),
                kind="ResourceClaimTemplate",
                name=f"{ns}/{name}",
                path=f"spec.{err.path}",
            )
    return err


def _allocate(
    state: ClusterState, node: Node, claims: Sequence[ResourceClaim], opts: Options
) -> Outcome:
    """`allocate`, its errors not yet located."""
    search = Search(state, node, claims, opts)
    search.prepare()
    try:
        upstream = opts.device_order == "first-fit" and opts.prefer is None
        if upstream and (search.mines or search.hidden_mines):
            search = Search(state, node, claims, opts, RAISE_MINES)
            search.prepare()
        found = search.run()
        if not found and search.mine_rule == SKIP_MINES and search.mines:
            optimistic = Search(state, node, claims, opts, MATCH_MINES)
            optimistic.prepare()
            if optimistic.run():
                raise search.first_mine()
    except _Timeout:
        return Outcome(
            reason=Reason(
                "Timeout",
                f"allocation search ended after {search.steps} steps "
                f"(budget {search.options.step_budget} steps / {search.options.timeout_seconds}s)",
                {"steps": search.steps},
            ),
            steps=search.steps,
        )
    if not found:
        return Outcome(reason=diagnose(search), steps=search.steps)
    allocated = tuple(
        allocated_claim(claim, search.picks[i], node) for i, claim in enumerate(search.claims)
    )
    return Outcome(claims=allocated, steps=search.steps)


def count_candidates(
    state: ClusterState,
    node: Node,
    claims: Sequence[ResourceClaim],
    options: Options | None = None,
) -> list[dict[str, Any]]:
    """For every (sub)request, how many devices of `node` survive each stage (matching, free,
    tolerated, capacity, counters), without searching: the auditor's raw evidence."""
    search = Search(state, node, claims, options or Options())
    search.prepare()
    return [request_counts(search, spec) for slot in search.slots for spec in slot.alternatives]


def shape_groups(
    state: ClusterState,
    node: Node,
    claims: Sequence[ResourceClaim],
    options: Options | None = None,
) -> list[dict[str, Any]]:
    """For every constraint of `claims`, the largest group of `node`'s devices that meets it
    (diagnose.constraint_groups): can the node's shape ever hold them, and can it now."""
    search = Search(state, node, claims, options or Options())
    return constraint_groups(search)
