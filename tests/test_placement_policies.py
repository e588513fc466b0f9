"""The FGD paper's placement policies (and draplan's) on small hand-made clusters: each rule's
choice of node and of device, the scores by hand from the simulator's formulas, tie rules, and
the scheduler's shared evaluations giving the same answers as evaluating every node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from draplan.allocator import Options, allocate
from draplan.api.core_v1 import Node
from draplan.api.resource_v1 import ResourceClaim
from draplan.cel import clear_caches
from draplan.cluster.devices import NANO, DeviceView
from draplan.cluster.fragmentation import Shape, Workload
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler import evaluations as evaluations_module
from draplan.scheduler.core import PodResult
from draplan.scheduler.framework import CycleState
from draplan.scheduler.plugins import draplanscore, placement
from draplan.scheduler.plugins.placement import (
    PAPER_POLICIES,
    POLICIES,
    DeviceResource,
    NodeInfo,
    PlacementContext,
    PodRequest,
    best_fit_score,
    dot_product_score,
    fgd_choices,
    gpu_packing_score,
)
from draplan.sources import openb

RES = DeviceResource(device_class=openb.DEVICE_CLASS, capacity=openb.CAPACITY)


@pytest.fixture(autouse=True)
def _fresh_cel() -> None:
    # CEL results are cached per device id; these tests reuse node names with other models.
    clear_caches()


def row(name: str, cpu: int, gpus: int, model: str = "G2") -> openb.NodeRow:
    return openb.NodeRow(name, cpu, 256 * 1024, gpus, model)


def pod_row(name: str, cpu: int, num_gpu: int = 0, milli: int = 0, spec: str = "") -> openb.PodRow:
    return openb.PodRow(name, cpu, 1024, num_gpu, milli if num_gpu else 0, spec)


def cluster(*rows: openb.NodeRow) -> ClusterState:
    objects: list[object] = [openb.device_class()]
    for r in rows:
        node, rs = openb.node_objects(r)
        objects.append(node)
        if rs is not None:
            objects.append(rs)
    return ClusterState.from_objects(objects)  # type: ignore[arg-type]


class Index:
    """A device preference that tries one device index first (to set up a state)."""

    def __init__(self, first: int) -> None:
        self.first = first

    def order(
        self,
        state: ClusterState,
        node: Node,
        claim: ResourceClaim,
        request: str,
        views: Sequence[DeviceView],
    ) -> Sequence[DeviceView]:
        want = f"gpu-{self.first}"
        return sorted(views, key=lambda v: v.name != want)


def occupy(state: ClusterState, node: str, pod: openb.PodRow, device: int = 0) -> None:
    """Bind `pod` on `node`, its GPU share on device `device`."""
    p, claim = openb.pod_objects(pod)
    if claim is not None:
        outcome = allocate(state, state.nodes[node], [claim], Options(prefer=Index(device)))
        assert outcome.ok
        state.put_claim(outcome.claims[0])
    state.bind_pod(p, node)


def scheduler(
    policy: str, workload: Workload | None = None, ties: str | None = None, seed: int = 0
) -> Scheduler:
    profile = build_profile(placement=policy, resource=RES, workload=workload, seed=seed, ties=ties)
    return Scheduler(profile, gangs=False)


def place(state: ClusterState, sched: Scheduler, pod: openb.PodRow) -> PodResult:
    p, claim = openb.pod_objects(pod)
    if claim is not None:
        state.put_claim(claim)
    return sched.schedule_pod(state, p)


def devices(result: PodResult) -> list[str]:
    out = []
    for claim in result.claims:
        alloc = claim.status.allocation
        assert alloc is not None
        out.extend(r.device for r in alloc.devices.results)
    return out


def scores(state: ClusterState, sched: Scheduler, pod: openb.PodRow) -> dict[str, float]:
    """Every feasible node's score for `pod`, without binding it."""
    p, claim = openb.pod_objects(pod)
    if claim is not None:
        state.put_claim(claim)
    info, cycle, status = sched._pre_filter(state, p)
    assert status.ok
    ev = sched.evaluator.refresh(state, cycle, info)
    return {n: e.score for n, e in ev.evals.items() if e.status.ok}


def info_of(state: ClusterState, node: str) -> NodeInfo:
    return PlacementContext(RES).node(state, state.nodes[node])


def request(cpu: int, count: int = 0, milli: int = 0) -> PodRequest:
    share = milli * NANO if count else 0
    return PodRequest(Shape(cpu, 0, count, share), milli if count else 0, count)


# --- scores by hand ---------------------------------------------------------------------------


def test_dot_product_prefers_the_least_aligned_node() -> None:
    state = cluster(row("a", 32_000, 2, "T4"), row("b", 96_000, 8))
    pod = request(4000, 1, 1000)
    # a: ((32/128)(4/128) + (2000/8000)(1000/8000)) / 2 = 0.01953 -> int(98.05) = 98
    assert dot_product_score(info_of(state, "a"), pod, RES) == 98
    # b: ((96/128)(4/128) + (8000/8000)(1000/8000)) / 2 = 0.07422 -> int(92.58) = 92
    assert dot_product_score(info_of(state, "b"), pod, RES) == 92
    assert place(state, scheduler("dotprod"), pod_row("p", 4000, 1, 1000)).node == "a"


def test_best_fit_prefers_the_tightest_node() -> None:
    state = cluster(row("a", 32_000, 2, "T4"), row("b", 96_000, 8))
    pod = request(4000, 1, 1000)
    # a: ½·28000/128000 + ½·1000/8000 = 0.171875 -> int(82.81) = 82; b: 0.796875 -> 20
    assert best_fit_score(info_of(state, "a"), pod, RES) == 82
    assert best_fit_score(info_of(state, "b"), pod, RES) == 20
    assert place(state, scheduler("bestfit"), pod_row("p", 4000, 1, 1000)).node == "a"


def test_gpu_packing_prefers_shared_then_used_then_small_empty_nodes() -> None:
    state = cluster(row("a", 64_000, 2), row("b", 64_000, 2), row("c", 64_000, 8))
    occupy(state, "a", pod_row("x", 1000, 1, 500), device=1)
    share = request(1000, 1, 300)
    # a: a shared GPU with 500 left: 100 - (500·100/1000)/10 = 95
    assert gpu_packing_score(info_of(state, "a"), share) == 95
    # empty nodes: max(33 - GPUs, GPUs): b 31, c 25
    assert gpu_packing_score(info_of(state, "b"), share) == 31
    assert gpu_packing_score(info_of(state, "c"), share) == 25
    # a whole GPU on a used node: max(50 - 1, 33) = 49
    assert gpu_packing_score(info_of(state, "a"), request(1000, 1, 1000)) == 49
    assert gpu_packing_score(info_of(state, "a"), request(1000)) == 0  # no GPU: 0
    result = place(state, scheduler("packing"), pod_row("p", 1000, 1, 300))
    assert result.node == "a" and devices(result) == ["gpu-1"]  # the shared GPU


def test_gpu_clustering_groups_pods_of_one_kind() -> None:
    state = cluster(row("a", 64_000, 2), row("b", 64_000, 2), row("c", 64_000, 8))
    occupy(state, "a", pod_row("s", 1000, 1, 500))
    occupy(state, "b", pod_row("w", 1000, 1, 1000))
    sched = scheduler("clustering")
    share = pod_row("p", 1000, 1, 200)
    # a (only share pods): 25·(8000 - 1500)/8000 + 75 = 20 + 75 = 95
    # b (only 1-gpu pods, another kind): 25·(8000 - 1000)/8000 = 21; c (idle): 0 + 25 = 25
    assert scores(state, sched, share) == {"a": 95.0, "b": 21.0, "c": 25.0}
    assert place(state, sched, pod_row("q", 1000, 1, 1000)).node == "b"
    # A pod without GPUs scores 0 everywhere: the tie goes to the smallest name.
    assert place(state, sched, pod_row("cpu", 1000)).node == "a"


def test_clustering_learns_pods_bound_by_others() -> None:
    state = cluster(row("a", 64_000, 4), row("b", 64_000, 4))
    sched = scheduler("clustering")
    assert place(state, sched, pod_row("p", 1000, 1, 200)).node == "a"
    occupy(state, "b", pod_row("w", 1000, 2, 1000))  # not through this scheduler
    s = scores(state, sched, pod_row("q", 1000, 2, 1000))
    assert s["b"] > s["a"]  # b hosts a 2-gpu pod: same kind


def hand_workload() -> Workload:
    return Workload([(Shape(1000, 0, 1, 500 * NANO), 0.5), (Shape(1000, 0, 1, 1000 * NANO), 0.5)])


def test_fgd_scores_by_hand_and_picks_the_device() -> None:
    state = cluster(row("a", 64_000, 2), row("b", 64_000, 2))
    occupy(state, "a", pod_row("x", 1000, 1, 400), device=1)  # a: gpu-1 has 600 left
    frag = PlacementContext(RES, hand_workload()).fragmentation(state)
    pod = request(1000, 1, 500)
    by_state = fgd_choices(info_of(state, "a"), pod, frag, 1.0)
    # F before: share-500 hosts on both GPUs (0); 1-gpu has one untouched GPU, 600 stuck: 300.
    # On the 600 GPU: F after = 0.5·100 + 0.5·100 = 100, Δ 200 -> int(sigmoid(0.2)·100) = 54.
    # On the untouched GPU: no untouched GPU left: 0.5·1100, Δ -250 -> 43.
    assert sorted(s for s, _ in by_state.values()) == [43, 54]
    b = fgd_choices(info_of(state, "b"), pod, frag, 1.0)
    assert [s for s, _ in b.values()] == [43]  # empty node: Δ = 0 - 250
    result = place(state, scheduler("fgd", hand_workload()), pod_row("p", 1000, 1, 500))
    assert result.node == "a" and devices(result) == ["gpu-1"]


def test_fgd_device_ties_go_to_the_first_gpu() -> None:
    state = cluster(row("a", 64_000, 4))
    result = place(state, scheduler("fgd", hand_workload()), pod_row("p", 1000, 1, 500))
    assert devices(result) == ["gpu-0"]


def test_best_fit_device_is_the_tightest_gpu() -> None:
    state = cluster(row("a", 64_000, 4))
    occupy(state, "a", pod_row("x", 1000, 1, 400), device=1)  # 600 left
    occupy(state, "a", pod_row("y", 1000, 1, 700), device=3)  # 300 left
    result = place(state, scheduler("bestfit"), pod_row("p", 1000, 1, 250))
    assert devices(result) == ["gpu-3"]
    whole = place(state, scheduler("bestfit"), pod_row("w", 1000, 2, 1000))
    assert devices(whole) == ["gpu-0", "gpu-2"]  # untouched GPUs in index order


def test_gpu_spec_and_cpu_are_respected_by_every_policy() -> None:
    for policy in POLICIES:
        state = cluster(row("a", 8_000, 2, "T4"), row("b", 64_000, 2, "P100"))
        assert place(state, scheduler(policy), pod_row("p", 1000, 1, 300, "P100")).node == "b"
        assert place(state, scheduler(policy), pod_row("q", 16_000, 1, 300)).node == "b"
        assert place(state, scheduler(policy), pod_row("r", 1000, 4, 1000)).node is None


def test_random_is_seeded_and_spreads() -> None:
    def nodes(seed: int) -> list[str | None]:
        state = cluster(*(row(f"n{i}", 64_000, 8) for i in range(6)))
        sched = scheduler("random", seed=seed)
        return [place(state, sched, pod_row(f"p{i}", 1000, 1, 200)).node for i in range(30)]

    first = nodes(1)
    assert first == nodes(1)
    assert first != nodes(2)
    assert len(set(first)) >= 4  # uniform over feasible nodes, not packed


def test_tie_rules() -> None:
    def chosen(ties: str, seed: int) -> list[str | None]:
        state = cluster(*(row(f"n{i}", 64_000, 8) for i in range(5)))
        sched = scheduler("packing", ties=ties, seed=seed)
        # CPU pods score 0 everywhere: every node ties.
        return [place(state, sched, pod_row(f"p{i}", 100)).node for i in range(10)]

    assert chosen("name", 1) == ["n0"] * 10
    spread = chosen("random", 1)
    assert spread == chosen("random", 1) and len(set(spread)) > 1


@pytest.mark.parametrize("policy", POLICIES)
def test_shared_evaluations_match_evaluating_every_node(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Identical nodes share answers inside the scheduler; switching that off changes
    nothing (placements, devices)."""
    rows = [row(f"g{i}", 96_000, 8) for i in range(6)] + [
        row(f"t{i}", 104_000, 2, "T4") for i in range(6)
    ]
    pods = []
    for i in range(160):
        kind = i % 5
        milli = (810, 470, 1000, 320, 0)[kind]
        pods.append(pod_row(f"p{i:03d}", 2000 + 1500 * (i % 7), 1 if milli else 0, milli))

    def run() -> list[tuple[str | None, list[str]]]:
        state = cluster(*rows)
        sched = scheduler(policy, seed=3)
        out = []
        for p in pods:
            result = place(state, sched, p)
            out.append((result.node, devices(result) if result.node else []))
        return out

    shared = run()
    monkeypatch.setattr(evaluations_module, "shareable", lambda pod, claims: False)
    assert run() == shared
    assert sum(1 for node, _ in shared if node) > 100


def test_unknown_policy_and_missing_resource() -> None:
    from draplan.api.errors import BadInput

    with pytest.raises(BadInput):
        build_profile(placement="nope", resource=RES)
    with pytest.raises(BadInput):
        build_profile(placement="fgd")
    with pytest.raises(ValueError):
        placement.policy("nope", RES)
    assert set(PAPER_POLICIES) < set(POLICIES)


def test_clustering_tags_count() -> None:
    state = cluster(row("a", 64_000, 8))
    sched = scheduler("clustering")
    for i in range(3):
        place(state, sched, pod_row(f"s{i}", 100, 1, 100))
    place(state, sched, pod_row("w", 100, 2, 1000))
    place(state, sched, pod_row("cpu", 100))
    ctx = sched.profile.pre_filters[0].context
    scores(state, sched, pod_row("probe", 100, 1, 100))  # syncs the last binding
    assert ctx.tags(state, "a") == Counter({"share-gpu": 3, "2-gpu": 1})


def test_pre_filter_must_run() -> None:
    state = cluster(row("a", 64_000, 8))
    sched = scheduler("fgd")
    plugin = sched.profile.scores[0][0]
    with pytest.raises(RuntimeError):
        plugin.score(state, CycleState(), None, state.nodes["a"])  # type: ignore[arg-type]


# --- draplan's own policy ---------------------------------------------------------------------


def shares_workload(*milli: int) -> Workload:
    return Workload([(Shape(1000, 0, 1, m * NANO), 1 / len(milli)) for m in milli])


def test_hole_waste_by_hand() -> None:
    holes = draplanscore.HoleWaste(shares_workload(470, 320, 220))
    # Nothing fits in 130 (or 30): all of it is wasted.
    assert holes.value("G2", 130 * NANO) == pytest.approx(130)
    # 350: a 320 leaves 30, a 220 leaves 130; a 470 goes elsewhere, and only with the
    # chance CLOSING is it the hole's last chance (350 wasted).
    c = draplanscore.CLOSING
    v350 = (30 / 3 + 130 / 3 + c * 350 / 3) / (2 / 3 + c / 3)
    assert holes.value("G2", 350 * NANO) == pytest.approx(v350)
    assert 30 < v350 < (350 + 30 + 130) / 3
    # A node's waste sums its partly used devices; untouched devices waste nothing.
    state = cluster(row("a", 64_000, 2))
    occupy(state, "a", pod_row("x", 1000, 1, 650), device=1)
    assert holes(info_of(state, "a").free) == pytest.approx(v350)
    # Tiny shares (rounded up to a thousandth of a device) fill any hole, with no recursion.
    tiny = draplanscore.HoleWaste(Workload([(Shape(0, 0, 1, 1), 1.0)]))
    assert tiny.value("G2", 999 * NANO) == 0.0


def test_kind_pressure() -> None:
    only_p100 = frozenset({"P100"})
    workload = Workload(
        [(Shape(1000, 0, 1, 1000 * NANO), 0.5), (Shape(1000, 0, 1, 1000 * NANO, only_p100), 0.5)]
    )
    pressure = draplanscore.kind_pressure({"G2": 3 * NANO, "P100": NANO}, workload)
    # Half the demand may use only P100, a quarter of the supply: pressure 2; G2 none.
    assert pressure == {"G2": 0.0, "P100": pytest.approx(2.0)}


def test_draplan_fills_the_hole_that_fgd_leaves() -> None:
    """A 220 pod: FGD opens the empty GPU (one more 470 still "fits" there), draplan puts it
    in the 350 hole beside a 650. The next two 470s then both fit only after draplan's choice."""
    workload = shares_workload(470, 320, 220)
    placed = {}
    for policy in ("fgd", "draplan"):
        state = cluster(row("a", 64_000, 1), row("b", 64_000, 1))
        occupy(state, "b", pod_row("x", 1000, 1, 650))
        sched = scheduler(policy, workload)
        pods = (pod_row("p", 1000, 1, 220), pod_row("q", 1000, 1, 470), pod_row("r", 1000, 1, 470))
        placed[policy] = [place(state, sched, p).node for p in pods]
    assert placed == {"fgd": ["a", "a", None], "draplan": ["b", "a", "a"]}


def test_draplan_steers_free_pods_off_scarce_kinds() -> None:
    """Half the typical pods may use only P100: an unconstrained pod goes to the G2 node,
    the constrained one to P100, whichever node the tie rule would try first."""
    only_p100 = frozenset({"P100"})
    workload = Workload(
        [(Shape(1000, 0, 1, 1000 * NANO), 0.5), (Shape(1000, 0, 1, 1000 * NANO, only_p100), 0.5)]
    )
    for ties in ("name", "random"):
        state = cluster(row("a", 64_000, 2, "P100"), row("b", 64_000, 2, "G2"))
        sched = scheduler("draplan", workload, ties=ties)
        assert place(state, sched, pod_row("p", 1000, 1, 1000)).node == "b"
        assert place(state, sched, pod_row("q", 1000, 1, 1000, "P100")).node == "a"


@pytest.mark.parametrize("weight", [draplanscore.SHARING_EXCESS, 0.0])
def test_draplan_leaves_a_pressed_kind_to_the_pods_that_need_it(
    weight: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half the typical pods may use only T4, one GPU in two. An unconstrained 320 would fill
    the T4's 350 hole best; draplan opens the G2 instead, and the T4-only pod that comes next
    still fits. Without the excess-pressure term it takes the T4 and the next pod fails."""
    monkeypatch.setattr(draplanscore, "SHARING_EXCESS", weight)
    only_t4 = frozenset({"T4"})
    workload = Workload(
        [(Shape(1000, 0, 1, 320 * NANO), 0.5), (Shape(1000, 0, 1, 320 * NANO, only_t4), 0.5)]
    )
    state = cluster(row("a", 64_000, 1, "T4"), row("b", 64_000, 1, "G2"))
    occupy(state, "a", pod_row("x", 1000, 1, 650))
    sched = scheduler("draplan", workload)
    free = place(state, sched, pod_row("free", 1000, 1, 320)).node
    needs_t4 = place(state, sched, pod_row("t4", 1000, 1, 320, "T4")).node
    if weight:
        assert (free, needs_t4) == ("b", "a")
    else:
        assert (free, needs_t4) == ("a", None)


def test_draplan_feeds_idle_gpus_where_cpu_is_short() -> None:
    """Typical pods take 8 CPUs a GPU. Node b has two free GPUs but CPU for one such pod
    (B_b = 1000 milli of GPU it cannot keep busy); node a has CPU to spare. A GPU pod that
    needs no CPU goes to b, where it leaves a typical pod's room intact and uses the GPU b's CPU
    could not, whichever node ties try first; FGD sees no difference (ΔF = 0 on both)."""
    workload = Workload([(Shape(8000, 0, 1, 1000 * NANO), 1.0)])
    for ties in ("name", "random"):
        state = cluster(row("a", 64_000, 2), row("b", 64_000, 2))
        occupy(state, "b", pod_row("cpu-hog", 56_000))
        sched = scheduler("draplan", workload, ties=ties)
        assert place(state, sched, pod_row("light", 0, 1, 1000)).node == "b"
    state = cluster(row("a", 64_000, 2), row("b", 64_000, 2))
    occupy(state, "b", pod_row("cpu-hog", 56_000))
    assert place(state, scheduler("fgd", workload), pod_row("light", 0, 1, 1000)).node == "a"
