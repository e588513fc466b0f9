"""Moves instead of new nodes: where moving a few running pods makes room on existing nodes
for every pod a new node of the plan was added for, the plan shows those moves and the price
of the node they save beside the scale-up, so a user can choose. Where moving one pod is
enough, the plan makes that move instead of buying the node (`make`), as `why` gives the move
as the first fix.

The moves are found on the cluster as it was before the scale-up (the plan's new nodes gone,
the pass's pending pods pending again), one new node after another in plan order. Accepted
moves stay in place for the next node, and after each one every other pod the plan placed on
an existing node must still fit, so the options shown hold all together. Moved pods go to the
cheapest node that takes them; pods the pass placed are not running yet and never move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from draplan.api.core_v1 import Pod
from draplan.autoscaler.moves import Mover, label, unlabel
from draplan.autoscaler.options import Option
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import release_claims
from draplan.scheduler.framework import Code, Status
from draplan.scheduler.gangs import Gang

NEAREST = 3  # existing nodes tried per pending pod, the smallest device shortfall first
MAX_NODES = 20  # new nodes of a plan weighed against moves at most


@dataclass(frozen=True)
class MoveOption:
    """Moves that make the new node `instead_of` unnecessary."""

    instead_of: str
    pool: str
    saving: float  # the node's price per hour
    place: dict[str, str]  # each pod the node was added for -> the existing node it fits on
    move: dict[str, str]  # each running pod to move -> the node it goes to
    made: bool = False  # made by the plan instead of buying the node (one pod moved)

    def to_dict(self) -> dict[str, object]:
        return {
            "insteadOf": self.instead_of,
            "pool": self.pool,
            "savingPerHour": round(self.saving, 4),
            "move": self.move,
            "place": self.place,
            "made": self.made,
        }

    @property
    def one_pod(self) -> bool:
        return len(self.move) == 1

    def text(self) -> str:
        moves = ", ".join(f"{pod} to {node}" for pod, node in self.move.items())
        places = ", ".join(f"{pod} fits on {node}" for pod, node in self.place.items())
        head = f"move {moves} so " if moves else "once the other moves are made, "
        return f"{head}{places}: one {self.pool} node fewer (${self.saving:.2f}/h)"


def move_options(
    state: ClusterState,
    scheduler: Scheduler,
    options: Sequence[Option],
    originals: dict[ObjectKey, Pod],
) -> list[MoveOption]:
    """The plan's new nodes (of `options`, built in `state`) that moves can spare, judged in
    a fork; `originals`: the pods pending when the pass began, as they were."""
    added = [(o, n.node.metadata.name) for o in options for n in o.nodes]
    added = [(o, name) for o, name in added if name in state.nodes]
    names = {name for _, name in added}
    hosted: dict[str, list[ObjectKey]] = {}
    elsewhere: set[ObjectKey] = set()
    for key in sorted(originals):
        pod = state.pods.get(key)
        if pod is not None and pod.spec.node_name:
            if pod.spec.node_name in names:
                hosted.setdefault(pod.spec.node_name, []).append(key)
            else:
                elsewhere.add(key)
    out: list[MoveOption] = []
    with state.forked():
        _before_scale_up(state, names, originals)
        # The groups the modelled scheduler places as one (`Scheduler.gangs_of`, as `why`'s
        # moves): a Kueue pod group under a kube-scheduler profile goes pod by pod.
        gangs = scheduler.gangs_of(state)
        for option, name in added[:MAX_NODES]:
            keys = hosted.get(name, [])
            if not keys or any(k in gangs for k in keys):
                continue  # a gang is placed whole, in one domain: not a few moves
            with state.forked():
                found = _room_for(state, scheduler, gangs, keys, frozenset(originals))
                if found is not None and _still_fit(state, scheduler, elsewhere):
                    state.commit()  # kept for the next node: options must hold together
                    state.fork()
                    out.append(MoveOption(name, option.pool.metadata.name, option.price, *found))
    return out


def make(
    state: ClusterState,
    scheduler: Scheduler,
    option: MoveOption,
    placed: dict[ObjectKey, str],
    originals: dict[ObjectKey, Pod],
) -> bool:
    """Make `option`'s moves in the planned `state` instead of its new node: the node gone
    with the pods placed on it, the moved pods on their targets, those pods where the option
    places them; checked by the scheduler step by step (the state unchanged when one fails)."""
    node = option.instead_of
    keys = sorted(k for k, n in placed.items() if n == node)
    if any(p.spec.node_name == node for k, p in state.pods.items() if k not in originals):
        return False  # a booked ProvisioningRequest's pod counts on the node

    def instead() -> bool:
        for key in keys:
            state.remove_pod(key)
            state.pods[key] = originals[key]
        state.remove_node(node)
        places = [(state.pods[unlabel(p)], n) for p, n in option.place.items()]
        return _apply(state, scheduler, places, option.move)

    return state.attempt(instead)


def _before_scale_up(state: ClusterState, added: set[str], originals: dict[ObjectKey, Pod]) -> None:
    """Undo the pass's placements: its pending pods pending again (generated claims gone),
    its new nodes removed."""
    for key, pod in sorted(originals.items()):
        placed = state.pods.get(key)
        if placed is not None and placed.spec.node_name:
            state.remove_pod(key)
            state.pods[key] = pod
    booked = [k for k, p in state.pods.items() if p.spec.node_name in added]
    for key in sorted(booked):
        state.remove_pod(key)  # a booked ProvisioningRequest's pod: not a real one
    for name in sorted(added):
        state.remove_node(name)


def _room_for(
    state: ClusterState,
    scheduler: Scheduler,
    gangs: dict[ObjectKey, Gang],
    keys: list[ObjectKey],
    fixed: frozenset[ObjectKey],
) -> tuple[dict[str, str], dict[str, str]] | None:
    """Place the pods `keys` on existing nodes, moving running pods where needed (applied to
    `state`): (where each pod goes, where each moved pod goes), or None."""
    place: dict[str, str] = {}
    move: dict[str, str] = {}
    for key in keys:
        pod = state.pods[key]
        direct = scheduler.schedule_pod(state, pod).node
        if direct is not None:
            place[label(key)] = direct
            continue
        made = _make_room(state, scheduler, gangs, pod, fixed)
        if made is None:
            return None
        place[label(key)] = made[0]
        move.update(made[1])
    return place, move


def _make_room(
    state: ClusterState,
    scheduler: Scheduler,
    gangs: dict[ObjectKey, Gang],
    pod: Pod,
    fixed: frozenset[ObjectKey],
) -> tuple[str, dict[str, str]] | None:
    """Free one of the nearest nodes for `pod` by moving pods off it, and bind them all."""
    _, statuses = scheduler.evaluate(state, pod)
    near = sorted(
        (_shortfall(status), name)
        for name, status in statuses.items()
        if status.code == Code.UNSCHEDULABLE  # resolvable: a taint or selector is not
    )
    mover = Mover(state, scheduler, gangs, by_price=True, fixed=fixed)
    for deficit, name in near[:NEAREST]:
        moved = mover.defragment(pod, name, deficit)
        if moved is None:
            continue
        with state.forked():
            if _apply(state, scheduler, [(pod, name)], moved):
                state.commit()
                state.fork()
                return name, moved
    return None


def _shortfall(status: Status) -> int:
    """Devices the node lacks for the pod, from the allocator's evidence (0 if none)."""
    evidence = getattr(status.detail, "evidence", None)
    if not isinstance(evidence, dict):
        return 0
    return sum(
        max(0, int(r.get("needed", 0)) - int(r.get("free", 0)))
        for r in evidence.get("requests", ())
        if isinstance(r, dict)
    )


def _apply(
    state: ClusterState,
    scheduler: Scheduler,
    places: list[tuple[Pod, str]],
    moved: dict[str, str],
) -> bool:
    """Make the moves the Mover found, in its order (the same state gives the same answers),
    with each pod of `places` on its node."""
    keys = [unlabel(text) for text in moved]
    if release_claims(state, set(keys)):
        return False
    for key in keys:
        state.unbind_pod(state.pods[key])
    if any(scheduler.schedule_pod(state, pod, [node]).node is None for pod, node in places):
        return False
    return all(
        scheduler.schedule_pod(state, state.pods[key], [target]).node is not None
        for key, target in zip(keys, moved.values(), strict=True)
    )


def _still_fit(state: ClusterState, scheduler: Scheduler, keys: set[ObjectKey]) -> bool:
    """The pods the plan placed on existing nodes all still fit there, after the moves."""
    if not keys:
        return True
    with state.forked():
        results = scheduler.run(state, only=keys, placements_only=True)
        placed = {r.key for r in results if r.node is not None}
    return keys <= placed
