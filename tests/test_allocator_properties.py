"""Property tests: the allocator against a brute-force enumerator (dra-semantics §3).

Random one-node clusters (1-3 node-local slices, <= 10 devices, shared counters on counter-only
slices, consumable capacity, taints, pre-allocated devices, the occasional incomplete or invalid
pool) and 1-3 random claims. For every example:

(a) a satisfiable result passes `validate_allocation` and the enumerator's own rule check;
(b) satisfiable / unsatisfiable / fatal agrees with an enumerator that tries every assignment
    (every choice of subrequest, every combination of candidate devices per request) and checks
    the rules directly, written from the semantics and sharing no code with the search.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from draplan.allocator import AllocationError, Options, allocate
from draplan.allocator.validate import validate_allocation
from draplan.api.core_v1 import Node
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import (
    AllocationResult,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CapacityRequirements,
    CELDeviceSelector,
    CounterSet,
    Device,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceCounterConsumption,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draplan.api.resource_v1 import Counter as ApiCounter
from draplan.cel import clear_caches, compile_selector
from draplan.cluster.state import ClusterState

DRIVER = "drv.example.com"
NODE = "node-1"
NUMA = f"{DRIVER}/numa"
MODEL = f"{DRIVER}/model"
MAX_PER_CLAIM = 32
EXAMPLES = 2000  # the mixed profile
PARTITION_EXAMPLES = 1000  # the shared-counter profile

A = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'
SELECTORS = (
    f'{A}.model == "a"',
    f'{A}.model == "b"',
    f'{A}.model != "c"',
    f'{A}.model in ["a", "c"]',
    f"has({A}.numa) && {A}.numa == 1",
    f"!has({A}.numa) || {A}.numa != 0",
    "device.allowMultipleAllocations",
    "!device.allowMultipleAllocations",
    f'"mem" in {C}',
    f'!("mem" in {C}) || {C}.mem.compareTo(quantity("8Gi")) >= 0',
)
CLASSES = {
    "gpu": (f'device.driver == "{DRIVER}"',),
    "gpu-nob": (f'device.driver == "{DRIVER}"', f'{A}.model != "b"'),
}

DevID = tuple[str, str, str]


# --- the model the generator draws ---------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    default: int | None = None
    minimum: int | None = None  # validRange when set
    step: int | None = None
    maximum: int | None = None
    values: tuple[int, ...] = ()  # validValues when non-empty


@dataclass(frozen=True)
class Dev:
    name: str
    slice: int
    numa: int | str | None
    qualified: bool  # numa published as "drv.example.com/numa" rather than "numa"
    model: str
    multi: bool
    mem: int | None  # capacity "mem" in Gi
    policy: Policy | None
    consumes: tuple[tuple[str, int], ...]
    counter_set: str
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)


@dataclass(frozen=True)
class PoolM:
    name: str
    counters: tuple[tuple[str, int], ...]  # set "gpu" on a counter-only slice when non-empty
    incomplete: bool  # resourceSliceCount one too high


@dataclass(frozen=True)
class Tol:
    key: str
    operator: str
    value: str
    effect: str


@dataclass(frozen=True)
class Sub:
    name: str  # "" for `exactly`
    device_class: str
    count: int
    all_mode: bool
    selectors: tuple[str, ...]
    tolerations: tuple[Tol, ...]
    mem: int | None  # capacity request in Gi
    admin: bool


@dataclass(frozen=True)
class Req:
    name: str
    alternatives: tuple[Sub, ...]
    first_available: bool


@dataclass(frozen=True)
class Con:
    match: bool
    attribute: str
    requests: tuple[str, ...]


@dataclass(frozen=True)
class ClaimM:
    requests: tuple[Req, ...]
    constraints: tuple[Con, ...]


@dataclass(frozen=True)
class Pre:
    device: int  # index into Scenario.devices
    kind: str  # "dedicated" | "shared" | "admin"
    mem: int  # Gi consumed by a share


@dataclass(frozen=True)
class Scenario:
    pools: tuple[PoolM, ...]
    slice_pools: tuple[str, ...]  # pool name of slice i
    devices: tuple[Dev, ...]
    claims: tuple[ClaimM, ...]
    pre: tuple[Pre, ...]


def dev_id(sc: Scenario, d: Dev) -> DevID:
    return (DRIVER, sc.slice_pools[d.slice], d.name)


def pool_bad(sc: Scenario, pool: PoolM) -> bool:
    """Incomplete, or invalid: duplicate device names, or consumesCounters naming a counter
    set / counter the pool does not define."""
    if pool.incomplete:
        return True
    devs = [d for d in sc.devices if sc.slice_pools[d.slice] == pool.name]
    if len({d.name for d in devs}) != len(devs):
        return True
    names = {c for c, _ in pool.counters}
    for d in devs:
        if d.consumes and (not pool.counters or d.counter_set != "gpu"):
            return True
        if any(c not in names for c, _ in d.consumes):
            return True
    return False


# --- the generator -------------------------------------------------------------------------


@st.composite
def policies(draw: st.DrawFn) -> Policy | None:
    kind = draw(st.sampled_from(["none", "none", "range", "values"]))
    if kind == "none":
        return None
    if kind == "range":
        low = draw(st.sampled_from([1, 2]))
        return Policy(
            default=draw(st.sampled_from([None, low])),
            minimum=low,
            step=draw(st.sampled_from([None, 1, 2, 3])),
            maximum=draw(st.sampled_from([None, 4, 6, 8])),
        )
    values = tuple(sorted(draw(st.sets(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3))))
    return Policy(default=draw(st.sampled_from([None, values[0]])), values=values)


def one_in(n: int) -> st.SearchStrategy[bool]:
    """True with probability about 1/n; shrinks towards False (Hypothesis favours 0)."""
    return st.integers(0, n - 1).map(lambda i: i == n // 2)


@st.composite
def tolerations(draw: st.DrawFn) -> tuple[Tol, ...]:
    if not draw(one_in(4)):
        return ()
    out = []
    for _ in range(draw(st.integers(1, 2))):
        op = draw(st.sampled_from(["Equal", "Exists"]))
        out.append(
            Tol(
                key=draw(st.sampled_from(["", "a", "b"])),
                operator=op,
                value="" if op == "Exists" else draw(st.sampled_from(["", "x"])),
                effect=draw(st.sampled_from(["", "NoSchedule", "NoExecute"])),
            )
        )
    return tuple(out)


@st.composite
def subs(draw: st.DrawFn, name: str, allow_admin: bool) -> Sub:
    n_sel = draw(st.sampled_from([0, 0, 1, 1, 2]))
    return Sub(
        name=name,
        device_class=draw(st.sampled_from(["gpu", "gpu", "gpu-nob"])),
        count=draw(st.sampled_from([1, 1, 1, 1, 2, 2, 3])),
        all_mode=draw(one_in(10)),
        selectors=tuple(draw(st.lists(st.sampled_from(SELECTORS), max_size=n_sel, unique=True))),
        tolerations=draw(tolerations()),
        mem=draw(st.integers(1, 10)) if draw(one_in(5)) else None,
        admin=allow_admin and draw(one_in(20)),
    )


@st.composite
def claim_models(draw: st.DrawFn) -> ClaimM:
    reqs = []
    for r in range(draw(st.integers(1, 2))):
        name = f"r{r}"
        if draw(one_in(4)):
            alts = (draw(subs("s0", False)), draw(subs("s1", False)))
            reqs.append(Req(name, alts, True))
        else:
            reqs.append(Req(name, (draw(subs("", True)),), False))
    cons = []
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2]))):
        kind = draw(st.sampled_from(["match", "match", "distinct-numa", "distinct-model"]))
        scopes: list[tuple[str, ...]] = [(), ()]
        for req in reqs:
            scopes.append((req.name,))
            if req.first_available:
                scopes.append((f"{req.name}/{req.alternatives[1].name}",))
        scope = draw(st.sampled_from(scopes))
        attr = MODEL if kind == "distinct-model" else NUMA
        cons.append(Con(kind == "match", attr, scope))
    return ClaimM(tuple(reqs), tuple(cons))


@st.composite
def scenarios(draw: st.DrawFn, partitions: bool = False) -> Scenario:
    """A random cluster and claims; `partitions` stresses shared counters: every pool has a
    counter set, most devices consume from it, and more devices are already allocated."""
    n_slices = draw(st.integers(1, 3))
    pool_index = [0]
    for _ in range(1, n_slices):
        pool_index.append(draw(st.integers(0, max(pool_index) + 1)))
    pools = []
    for k in range(max(pool_index) + 1):
        counters: tuple[tuple[str, int], ...] = ()
        if partitions or draw(one_in(3)):
            counters = (("mem", draw(st.integers(2, 8))), ("sm", draw(st.integers(1, 4))))
        pools.append(PoolM(f"pool-{k}", counters, draw(one_in(40))))
    slice_pools = tuple(pools[i].name for i in pool_index)
    devices = []
    for i in range(draw(st.sampled_from([1, 2, 3, 4, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10]))):
        s = draw(st.integers(0, n_slices - 1))
        pool = pools[pool_index[s]]
        multi = draw(one_in(4))
        mem = draw(st.sampled_from([4, 8])) if draw(one_in(2 if multi else 3)) else None
        consumes: tuple[tuple[str, int], ...] = ()
        counter_set = "gpu"
        consuming = not draw(one_in(4)) if partitions else draw(st.booleans())
        if pool.counters and consuming:
            consumes = draw(
                st.sampled_from(
                    [
                        (("mem", draw(st.integers(1, 4))),),
                        (("mem", draw(st.integers(1, 4))), ("sm", 1)),
                        (("sm", 1),),
                    ]
                )
            )
        elif draw(one_in(250)):
            consumes, counter_set = (("mem", 1),), "nosuch"  # makes the pool invalid
        taints: tuple[tuple[str, str, str], ...] = ()
        if draw(one_in(9)):
            taints = (
                (
                    draw(st.sampled_from(["a", "b"])),
                    draw(st.sampled_from(["", "x"])),
                    draw(st.sampled_from(["NoSchedule", "NoSchedule", "NoExecute", "None"])),
                ),
            )
        devices.append(
            Dev(
                name=f"dev-{i}",
                slice=s,
                numa=draw(st.sampled_from([0, 0, 0, 1, 1, 1, 2, 2, None, "1"])),
                qualified=draw(st.booleans()),
                model=draw(st.sampled_from("abc")),
                multi=multi,
                mem=mem,
                policy=draw(policies()) if mem is not None else None,
                consumes=consumes,
                counter_set=counter_set,
                taints=taints,
            )
        )
    # Occasionally the same device name in two slices of one pool: an invalid pool.
    pairs = [
        (i, j)
        for i, j in itertools.combinations(range(len(devices)), 2)
        if devices[i].slice != devices[j].slice
        and slice_pools[devices[i].slice] == slice_pools[devices[j].slice]
    ]
    duplicate = draw(one_in(16))
    if pairs and duplicate:
        i, j = draw(st.sampled_from(pairs))
        d = devices[j]
        devices[j] = Dev(
            devices[i].name,
            d.slice,
            d.numa,
            d.qualified,
            d.model,
            d.multi,
            d.mem,
            d.policy,
            d.consumes,
            d.counter_set,
            d.taints,
        )
    partial = Scenario(tuple(pools), slice_pools, tuple(devices), (), ())
    claims = tuple(draw(claim_models()) for _ in range(draw(st.sampled_from([1, 1, 2, 2, 3]))))
    return Scenario(
        tuple(pools), slice_pools, tuple(devices), claims, draw(pre_allocs(partial, partitions))
    )


@st.composite
def pre_allocs(draw: st.DrawFn, sc: Scenario, partitions: bool) -> tuple[Pre, ...]:
    if not draw(one_in(2 if partitions else 3)):
        return ()
    good = {p.name for p in sc.pools if not pool_bad(sc, p)}
    totals = {(p.name, c): v for p in sc.pools for c, v in p.counters}
    # Sometimes keep an over-consumed pool (its published counters shrank).
    overdraw = draw(one_in(2 if partitions else 4))
    used: Counter[tuple[str, str]] = Counter()
    out = []
    for i, d in enumerate(sc.devices):
        pool = sc.slice_pools[d.slice]
        if pool not in good or not draw(one_in(2 if overdraw and d.consumes else 4)):
            continue
        kinds = ["shared", "shared", "dedicated", "admin"] if d.multi else ["dedicated"] * 3
        kind = draw(st.sampled_from([*kinds, "admin"]))
        mem = draw(st.integers(1, d.mem)) if kind == "shared" and d.mem else 0
        if kind != "admin" and d.consumes:
            after = used + Counter({(pool, c): a for c, a in d.consumes})
            if not overdraw and any(after[k] > totals[k] for k in after):
                continue
            used = after
        out.append(Pre(i, kind, mem))
    return tuple(out)


# --- building API objects ------------------------------------------------------------------


def gi(n: int) -> Quantity:
    return Quantity.parse(f"{n}Gi")


def api_policy(p: Policy | None) -> CapacityRequestPolicy | None:
    if p is None:
        return None
    rng = None
    if p.minimum is not None:
        rng = CapacityRequestPolicyRange(
            min=gi(p.minimum),
            step=gi(p.step) if p.step else None,
            max=gi(p.maximum) if p.maximum else None,
        )
    return CapacityRequestPolicy(
        default=gi(p.default) if p.default is not None else None,
        valid_values=tuple(gi(v) for v in p.values),
        valid_range=rng,
    )


def api_device(d: Dev) -> Device:
    attrs = {"model": DeviceAttribute(string=d.model)}
    if d.numa is not None:
        key = NUMA if d.qualified else "numa"
        attrs[key] = (
            DeviceAttribute(string=d.numa)
            if isinstance(d.numa, str)
            else DeviceAttribute(int_=d.numa)
        )
    return Device(
        name=d.name,
        attributes=attrs,
        capacity=(
            {"mem": DeviceCapacity(value=gi(d.mem), request_policy=api_policy(d.policy))}
            if d.mem is not None
            else {}
        ),
        consumes_counters=(
            (
                DeviceCounterConsumption(
                    counter_set=d.counter_set,
                    counters={c: ApiCounter(value=Quantity.parse(str(a))) for c, a in d.consumes},
                ),
            )
            if d.consumes
            else ()
        ),
        taints=tuple(DeviceTaint(key=k, value=v, effect=e) for k, v, e in d.taints),
        allow_multiple_allocations=True if d.multi else None,
    )


def api_sub(s: Sub) -> dict[str, object]:
    return {
        "device_class_name": s.device_class,
        "selectors": tuple(
            DeviceSelector(cel=CELDeviceSelector(expression=e)) for e in s.selectors
        ),
        "allocation_mode": "All" if s.all_mode else "ExactCount",
        "count": 0 if s.all_mode else s.count,
        "tolerations": tuple(
            DeviceToleration(key=t.key, operator=t.operator, value=t.value, effect=t.effect)
            for t in s.tolerations
        ),
        "capacity": CapacityRequirements(requests={"mem": gi(s.mem)}) if s.mem else None,
    }


def api_claim(i: int, c: ClaimM) -> ResourceClaim:
    requests = []
    for r in c.requests:
        if r.first_available:
            subs_ = tuple(DeviceSubRequest(name=s.name, **api_sub(s)) for s in r.alternatives)  # type: ignore[arg-type]
            requests.append(DeviceRequest(name=r.name, first_available=subs_))
        else:
            s = r.alternatives[0]
            exact = ExactDeviceRequest(admin_access=True if s.admin else None, **api_sub(s))  # type: ignore[arg-type]
            requests.append(DeviceRequest(name=r.name, exactly=exact))
    constraints = tuple(
        DeviceConstraint(
            requests=con.requests,
            match_attribute=con.attribute if con.match else None,
            distinct_attribute=None if con.match else con.attribute,
        )
        for con in c.constraints
    )
    return ResourceClaim(
        metadata=ObjectMeta(name=f"claim-{i}", namespace="default", uid=f"uid-{i}"),
        spec=ResourceClaimSpec(
            devices=DeviceClaim(requests=tuple(requests), constraints=constraints)
        ),
    )


def build(sc: Scenario) -> tuple[ClusterState, Node, list[ResourceClaim]]:
    node = Node(metadata=ObjectMeta(name=NODE, labels={"kubernetes.io/hostname": NODE}))
    objects: list[KubeStruct] = [node]
    for name, sels in CLASSES.items():
        objects.append(
            DeviceClass(
                metadata=ObjectMeta(name=name),
                spec=DeviceClassSpec(
                    selectors=tuple(
                        DeviceSelector(cel=CELDeviceSelector(expression=e)) for e in sels
                    )
                ),
            )
        )
    for pool in sc.pools:
        mine = [i for i, p in enumerate(sc.slice_pools) if p == pool.name]
        count = len(mine) + (1 if pool.counters else 0) + (1 if pool.incomplete else 0)
        rp = ResourcePool(name=pool.name, generation=1, resource_slice_count=count)
        for i in mine:
            devs = tuple(api_device(d) for d in sc.devices if d.slice == i)
            spec = ResourceSliceSpec(driver=DRIVER, pool=rp, node_name=NODE, devices=devs)
            objects.append(ResourceSlice(metadata=ObjectMeta(name=f"slice-{i}"), spec=spec))
        if pool.counters:
            cs = CounterSet(
                name="gpu",
                counters={c: ApiCounter(value=Quantity.parse(str(v))) for c, v in pool.counters},
            )
            spec = ResourceSliceSpec(driver=DRIVER, pool=rp, node_name=NODE, shared_counters=(cs,))
            objects.append(ResourceSlice(metadata=ObjectMeta(name=f"{pool.name}-ctr"), spec=spec))
    if sc.pre:
        results = []
        for k, pre in enumerate(sc.pre):
            d = sc.devices[pre.device]
            shared = pre.kind == "shared"
            results.append(
                DeviceRequestAllocationResult(
                    request="pre",
                    driver=DRIVER,
                    pool=sc.slice_pools[d.slice],
                    device=d.name,
                    admin_access=True if pre.kind == "admin" else None,
                    share_id=f"00000000-0000-0000-0000-{k:012d}" if shared else None,
                    consumed_capacity={"mem": gi(pre.mem)} if shared and d.mem else {},
                )
            )
        alloc = AllocationResult(devices=DeviceAllocationResult(results=tuple(results)))
        objects.append(
            ResourceClaim(
                metadata=ObjectMeta(name="pre", namespace="default", uid="uid-pre"),
                status=ResourceClaimStatus(allocation=alloc),
            )
        )
    claims = [api_claim(i, c) for i, c in enumerate(sc.claims)]
    return ClusterState.from_objects(objects), node, claims


# --- the brute-force enumerator ------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    slot: int
    claim: int
    parent: str
    name: str  # "r" or "r/s"
    sub: Sub


@dataclass(frozen=True)
class BPick:
    spec: Spec
    dev: DevID


@dataclass
class Verdict:
    sat: bool
    fatal_all: bool  # an All request meets an incomplete/invalid pool: always fatal
    constraint_fatal_possible: bool  # an All request is in a constraint's scope
    solution: list[BPick]
    nodes: int


def rounded(requested: int | None, value: int, p: Policy | None) -> int | None:
    """What a request consumes of a capacity, per its request policy (§3.10)."""
    if requested is None:
        return p.default if p is not None and p.default is not None else value
    if p is None:
        return requested
    if p.values:
        return next((v for v in p.values if v >= requested), None)
    if p.minimum is not None:
        if requested < p.minimum:
            amount = p.minimum
        elif p.step:
            amount = p.minimum + math.ceil((requested - p.minimum) / p.step) * p.step
        else:
            amount = requested
        if amount != p.default and p.maximum is not None and amount > p.maximum:
            return None
        return amount
    return requested


def tolerates(t: Tol, key: str, value: str, effect: str) -> bool:
    if t.effect not in ("", effect) or t.key not in ("", key):
        return False
    if t.operator == "Exists":
        return True
    return t.operator in ("", "Equal") and t.value == value


class Brute:
    def __init__(self, sc: Scenario, state: ClusterState) -> None:
        self.sc = sc
        self.state = state
        self.bad = {p.name for p in sc.pools if pool_bad(sc, p)}
        self.totals = {p.name: dict(p.counters) for p in sc.pools}
        # Upstream's device order: pools by (driver, name), slices by name, devices as
        # published (1.36+, incubating allocator's GatherPools and allocateOne).
        order = sorted(sc.devices, key=lambda d: (sc.slice_pools[d.slice], f"slice-{d.slice}"))
        self.devs: dict[DevID, Dev] = {
            dev_id(sc, d): d for d in order if sc.slice_pools[d.slice] not in self.bad
        }
        self.pre_in_use: set[DevID] = set()
        self.pre_shared: dict[DevID, int] = {}
        self.pre_counters: Counter[tuple[str, str]] = Counter()
        for pre in sc.pre:
            d = sc.devices[pre.device]
            did = dev_id(sc, d)
            if pre.kind == "admin":
                continue
            if pre.kind == "dedicated":
                self.pre_in_use.add(did)
            else:
                self.pre_shared[did] = self.pre_shared.get(did, 0) + pre.mem
            for c, a in d.consumes:
                self.pre_counters[(did[1], c)] += a
        self.slots: list[list[Spec]] = []
        for ci, claim in enumerate(sc.claims):
            for req in claim.requests:
                slot = len(self.slots)
                self.slots.append(
                    [
                        Spec(slot, ci, req.name, f"{req.name}/{s.name}" if s.name else req.name, s)
                        for s in req.alternatives
                    ]
                )
        self.nodes = 0

    # Per-device rules.

    def selected(self, spec: Spec, did: DevID) -> bool:
        view = self.state.device(did)
        assert view is not None
        exprs = (*CLASSES[spec.sub.device_class], *spec.sub.selectors)
        return all(compile_selector(e).matches(view.cel) for e in exprs)

    def consumed(self, spec: Spec, d: Dev) -> dict[str, int] | None:
        if spec.sub.mem is not None and d.mem is None:
            return None
        if d.mem is None:
            return {}
        amount = rounded(spec.sub.mem, d.mem, d.policy)
        return None if amount is None else {"mem": amount}

    def eligible(self, spec: Spec, did: DevID) -> bool:
        d = self.devs[did]
        used = self.consumed(spec, d)
        if used is None:
            return False
        base = self.pre_shared.get(did, 0) if d.multi else 0
        return all(base + v <= (d.mem or 0) for v in used.values())

    def tolerated(self, spec: Spec, d: Dev) -> bool:
        return all(
            effect not in ("NoSchedule", "NoExecute")
            or any(tolerates(t, key, value, effect) for t in spec.sub.tolerations)
            for key, value, effect in d.taints
        )

    def free_for(self, spec: Spec, did: DevID) -> bool:
        return spec.sub.admin or did not in self.pre_in_use

    def candidates(self, spec: Spec) -> list[DevID]:
        return [
            did
            for did, d in self.devs.items()
            if self.free_for(spec, did)
            and self.tolerated(spec, d)
            and self.selected(spec, did)
            and self.eligible(spec, did)
        ]

    def all_set(self, spec: Spec) -> list[DevID]:
        # Selectors and capacity only: in-use, taints and counters then fail the request.
        return [did for did in self.devs if self.selected(spec, did) and self.eligible(spec, did)]

    # The whole rule set on a (partial) assignment, in slot order.

    def attribute(self, d: Dev, attr: str) -> tuple[str, object] | None:
        value = d.numa if attr == NUMA else d.model
        if value is None:
            return None
        return (type(value).__name__, value)

    def valid(self, picks: Sequence[BPick]) -> bool:
        per_claim = Counter(p.spec.claim for p in picks)
        if any(n > MAX_PER_CLAIM for n in per_claim.values()):
            return False
        by_dev: dict[DevID, list[BPick]] = defaultdict(list)
        for p in picks:
            d = self.devs.get(p.dev)
            if d is None:
                return False
            if not self.free_for(p.spec, p.dev) or not self.tolerated(p.spec, d):
                return False
            if not self.eligible(p.spec, p.dev):
                return False
            by_dev[p.dev].append(p)
        # Exclusivity. A later claim may reuse a dedicated device only with admin access, and
        # never within one claim; multi-allocatable devices are shared by capacity.
        mem_used: dict[DevID, int] = {}
        for did, plist in by_dev.items():
            d = self.devs[did]
            if len({(p.spec.slot, p.spec.name) for p in plist}) != len(plist):
                return False  # a device twice in one request
            if d.multi:
                total = self.pre_shared.get(did, 0)
                for p in plist:
                    c = self.consumed(p.spec, d)
                    assert c is not None
                    total += c.get("mem", 0)
                if d.mem is not None and total > d.mem:
                    return False
                mem_used[did] = total
                continue
            claims = [p.spec.claim for p in plist]
            if len(set(claims)) != len(claims):
                return False
            if any(not p.spec.sub.admin for p in plist[1:]):
                return False
        # Shared counters, per pool: every counter of a touched pool must stay within total.
        used: Counter[tuple[str, str]] = Counter()
        touched: set[str] = set()
        shared_counted: set[DevID] = set()
        for p in picks:
            d = self.devs[p.dev]
            if not d.consumes:
                continue
            if d.multi:
                if p.dev in self.pre_shared or p.dev in shared_counted:
                    continue
                shared_counted.add(p.dev)
            touched.add(p.dev[1])
            for cname, amount in d.consumes:
                used[(p.dev[1], cname)] += amount
        for pool in touched:
            for cname, total in self.totals[pool].items():
                if self.pre_counters[(pool, cname)] + used[(pool, cname)] > total:
                    return False
        # Constraints.
        for ci, claim in enumerate(self.sc.claims):
            for con in claim.constraints:
                values = [
                    self.attribute(self.devs[p.dev], con.attribute)
                    for p in picks
                    if p.spec.claim == ci
                    and (
                        not con.requests
                        or p.spec.parent in con.requests
                        or p.spec.name in con.requests
                    )
                ]
                if any(v is None for v in values):
                    return False
                if con.match and len(set(values)) > 1:
                    return False
                if not con.match and len(set(values)) != len(values):
                    return False
        return True

    def solve(self) -> Verdict:
        specs = [s for slot in self.slots for s in slot]
        has_all = any(s.sub.all_mode for s in specs)
        if has_all and self.bad:
            return Verdict(False, True, False, [], 0)
        con_all = False
        for s in specs:
            if s.sub.all_mode:
                for con in self.sc.claims[s.claim].constraints:
                    if not con.requests or s.parent in con.requests or s.name in con.requests:
                        con_all = True
        options: dict[Spec, list[tuple[DevID, ...]]] = {}
        for s in specs:
            if s.sub.all_mode:
                devs = self.all_set(s)
                options[s] = [tuple(devs)] if devs else []
            else:
                options[s] = list(itertools.combinations(self.candidates(s), s.sub.count))
        solution: list[BPick] = []

        def search(slot: int, picks: list[BPick]) -> bool:
            self.nodes += 1
            if slot == len(self.slots):
                solution.extend(picks)
                return True
            for spec in self.slots[slot]:
                for combo in options[spec]:
                    new = picks + [BPick(spec, d) for d in combo]
                    if self.valid(new) and search(slot + 1, new):
                        return True
            return False

        sat = search(0, [])
        return Verdict(sat, False, con_all, solution, self.nodes)


# --- the property --------------------------------------------------------------------------


def picks_of(brute: Brute, claims: Sequence[ResourceClaim]) -> list[BPick]:
    """The allocator's results as enumerator picks (slot order), checking each result."""
    by_name = {(s.claim, s.name): s for slot in brute.slots for s in slot}
    picks: list[BPick] = []
    for ci, claim in enumerate(claims):
        alloc = claim.status.allocation
        assert alloc is not None
        for res in alloc.devices.results:
            spec = by_name[(ci, res.request)]
            did = (res.driver, res.pool, res.device)
            d = brute.devs[did]
            assert bool(res.admin_access) == spec.sub.admin
            assert res.tolerations == api_sub(spec.sub)["tolerations"]
            if d.multi:
                assert res.share_id is not None
                want = brute.consumed(spec, d)
                assert want is not None
                assert res.consumed_capacity == {k: gi(v) for k, v in want.items()}
            else:
                assert res.share_id is None and not res.consumed_capacity
            picks.append(BPick(spec, did))
    picks.sort(key=lambda p: p.spec.slot)
    # One alternative per request, with exactly the devices it needs.
    for slot in brute.slots:
        chosen = {p.spec for p in picks if p.spec.slot == slot[0].slot}
        assert len(chosen) == 1, chosen
        spec = chosen.pop()
        devs = [p.dev for p in picks if p.spec == spec]
        if spec.sub.all_mode:
            assert sorted(devs) == sorted(brute.all_set(spec))
        else:
            assert len(devs) == spec.sub.count
    return picks


STATS: Counter[str] = Counter()


def coverage(brute: Brute, picks: list[BPick]) -> set[str]:
    """Which features a satisfiable allocation exercised (reported as Hypothesis events)."""
    out = set()
    for p in picks:
        d = brute.devs[p.dev]
        sub = p.spec.sub
        if d.multi:
            out.add("a shared device")
            if sum(1 for q in picks if q.dev == p.dev) > 1:
                out.add("a device shared twice")
            if p.dev in brute.pre_shared:
                out.add("a device shared with a pre-allocated claim")
        if d.consumes:
            out.add("counters")
        if sub.mem is not None:
            out.add("a capacity request")
        if d.policy is not None:
            out.add("a request policy")
        if any(e != "None" for _, _, e in d.taints):
            out.add("a tolerated taint")
        if sub.admin:
            out.add("admin access")
            if p.dev in brute.pre_in_use or any(
                q.dev == p.dev and q.spec.claim != p.spec.claim for q in picks
            ):
                out.add("admin access on a used device")
        if sub.all_mode:
            out.add("All")
        if p.spec.slot != 0 and p.spec.name.endswith("/s1"):
            out.add("a second subrequest")
        if p.spec.slot == 0 and p.spec.name.endswith("/s1"):
            out.add("the first request's second subrequest")
    if any(c.constraints for c in brute.sc.claims):
        out.add("a constraint")
    if brute.bad:
        out.add("a bad pool skipped")
    if brute.pre_in_use or brute.pre_shared:
        out.add("pre-allocated devices")
    if len(brute.sc.claims) > 1:
        out.add("several claims")
    return out


def properties(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@properties(EXAMPLES)
@given(scenarios())
def test_allocator_agrees_with_brute_force(sc: Scenario) -> None:
    STATS["mixed"] += 1
    check_scenario(sc)


@properties(PARTITION_EXAMPLES)
@given(scenarios(partitions=True))
def test_allocator_agrees_with_brute_force_on_partitions(sc: Scenario) -> None:
    STATS["partitions"] += 1
    check_scenario(sc)


def check_scenario(sc: Scenario) -> None:
    # Selector results are cached per device ID; every example reuses the IDs.
    clear_caches()
    state, node, claims = build(sc)
    brute = Brute(sc, state)
    expected = brute.solve()
    baseline = set(validate_allocation(state, node, []))
    STATS["examples"] += 1
    for order in ("tight", "first-fit"):
        try:
            outcome = allocate(state, node, claims, Options(device_order=order))
        except AllocationError as err:
            if expected.fatal_all:
                assert "asks for all devices" in str(err)
                event("fatal: All over a bad pool")
                STATS["fatal"] += 1
                continue
            assert expected.constraint_fatal_possible, f"unexpected fatal error: {err}"
            assert "claim constraint would not be satisfied" in str(err)
            event("fatal: All device violates a constraint")
            STATS["fatal"] += 1
            continue
        assert not expected.fatal_all, "an All request over a bad pool must be fatal"
        assert outcome.ok == expected.sat, (
            f"{order}: allocator says {'ok' if outcome.ok else outcome.reason}, "
            f"brute force says {'sat' if expected.sat else 'unsat'} {expected.solution}"
        )
        event("sat" if outcome.ok else "unsat")
        STATS["sat" if outcome.ok else "unsat"] += 1
        if not outcome.ok:
            continue
        # (a) the independent validator accepts the result ...
        problems = [p for p in validate_allocation(state, node, list(outcome.claims)) if p]
        assert [p for p in problems if p not in baseline] == []
        # ... and so does the enumerator's rule check.
        picks = picks_of(brute, outcome.claims)
        assert brute.valid(picks)
        if order == "tight":
            for feature in coverage(brute, picks):
                event(f"sat with {feature}")
        if order == "first-fit":
            # Upstream's search takes combinations in device order, request by request, and
            # keeps the first that fits: the enumerator's first solution in that order.
            got = [(p.spec.claim, p.spec.name, p.dev) for p in picks]
            assert got == [(p.spec.claim, p.spec.name, p.dev) for p in expected.solution]
        # The first request's prioritized list: the earliest alternative that lets all fit.
        if len(brute.slots[0]) > 1:
            assert picks and expected.solution
            first = next(p.spec for p in picks if p.spec.slot == 0)
            want = next(p.spec for p in expected.solution if p.spec.slot == 0)
            assert first.name == want.name


def test_examples_ran() -> None:
    """Runs after the properties (file order): each property that ran compared all its
    examples, and the answers are not lopsided (a generator gone dull shows here)."""
    for profile, wanted in (("mixed", EXAMPLES), ("partitions", PARTITION_EXAMPLES)):
        assert STATS[profile] == 0 or STATS[profile] >= wanted, profile
    if STATS["mixed"] and STATS["partitions"]:
        total = EXAMPLES + PARTITION_EXAMPLES
        assert STATS["examples"] >= total
        # Two device orders per example.
        assert STATS["sat"] > total // 2 and STATS["unsat"] > total // 2
