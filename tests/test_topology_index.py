"""The pod index (the pods each node holds, those with pod affinity) and the per-domain counts
kept from it (`NodeSums`) stay right through binds, unbinds, pods replaced and deleted, Node
objects relabelled, and forks reverted or committed: after any sequence, they equal a fresh
computation on the state as it is, and so do the two plugins' PreFilter and PreScore answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import decode
from draplan.api.core_v1 import Node, Pod
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, has_pod_affinity, key_of
from draplan.scheduler.plugins.interpodaffinity import FilterState, InterPodAffinity, ScoreMap
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread
from topology_builders import HOSTNAME, ZONE, node, pod, preferred, required, spread, term

ZONES = ("a", "b", "c")
NODES = [node(f"n{i}", ZONES[i % 3]) for i in range(6)]
APPS = ("web", "db", "batch")


def _pod(i: int) -> dict[str, Any]:
    app = APPS[i % 3]
    doc = pod(f"p{i}", ns=("default", "ml")[i % 2], labels={"app": app, "rev": str(i % 2)})
    if i % 4 == 0:
        doc["spec"]["affinity"] = required("podAntiAffinity", term(HOSTNAME, {"app": app}))
    elif i % 4 == 1:
        doc["spec"]["affinity"] = preferred("podAffinity", (10, term(ZONE, {"app": "db"})))
    return doc


PODS = [decode(_pod(i)) for i in range(12)]
INCOMING = [
    decode(
        pod(
            "x0", labels={"app": "web"}, affinity=required("podAffinity", term(ZONE, {"app": "db"}))
        )
    ),
    decode(
        pod(
            "x1",
            labels={"app": "web"},
            spread=[
                spread(ZONE, 1, {"app": "web"}),
                spread(HOSTNAME, 2, {"app": "web"}, when="ScheduleAnyway"),
            ],
        )
    ),
    decode(
        pod(
            "x2",
            ns="ml",
            labels={"app": "batch"},
            affinity=preferred(
                "podAntiAffinity", (5, term(HOSTNAME, {"app": "batch"}, namespace_selector={}))
            ),
        )
    ),
]

op = st.tuples(
    st.sampled_from(
        (
            "bind",
            "unbind",
            "finish",
            "delete",
            "relabel",
            "repod",
            "everywhere",
            "fork",
            "revert",
            "commit",
        )
    ),
    st.integers(0, 11),
    st.integers(0, 5),
)


def _expected_index(state: ClusterState) -> tuple[dict[str, set[Any]], dict[Any, str]]:
    held: dict[str, set[Any]] = {}
    with_affinity: dict[Any, str] = {}
    for key, p in state.pods.items():
        if p.spec.node_name and not is_terminal(p):
            held.setdefault(p.spec.node_name, set()).add(key)
            if has_pod_affinity(p):
                with_affinity[key] = p.spec.node_name
    return held, with_affinity


def _existing(fs: FilterState) -> dict[tuple[str, str], int]:
    """The running pods' anti-affinity that selects the pod, summed per topology pair."""
    out: dict[tuple[str, str], int] = {}
    for key, values in fs.existing_anti:
        for value, n in values.items():
            out[(key, value)] = out.get((key, value), 0) + n
    return out


def _scores(ss: ScoreMap | None) -> object:
    if ss is None:
        return None
    terms = sorted((f, k, sorted(v.items())) for f, k, v in ss.by_term)
    return (dict(ss.incoming), terms)


def _answers(plugins: tuple[InterPodAffinity, PodTopologySpread], state: ClusterState) -> list[Any]:
    affinity, spreading = plugins
    nodes = [state.nodes[n] for n in sorted(state.nodes)]
    out: list[Any] = []
    for p in INCOMING:
        assert isinstance(p, Pod)
        fs = affinity.filter_state(state, p)
        out.append(
            None if fs is None else (_existing(fs), dict(fs.affinity), dict(fs.anti), fs.self_match)
        )
        out.append(_scores(affinity.score_state(state, p)))
        sf = spreading.filter_state(state, p)
        out.append(None if sf is None else (dict(sf.counts), sf.minimum))
        ss = spreading.score_state(state, p, nodes)
        out.append(None if ss is None else (dict(ss.counts), ss.ignored, ss.weights))
    return out


@settings(max_examples=80, deadline=None)
@given(ops=st.lists(op, max_size=50))
def test_index_and_counts_through_any_sequence(ops: list[tuple[str, int, int]]) -> None:
    state = ClusterState.from_objects([decode(d) for d in NODES] + PODS)
    kept = (InterPodAffinity(), PodTopologySpread())
    depth = 0
    for action, i, n in ops:
        key = key_of(PODS[i])
        current = state.pods.get(key)
        name = f"n{n}"
        waiting = current is not None and not current.spec.node_name and not is_terminal(current)
        if action == "bind" and current is not None and waiting:
            state.bind_pod(current, name)
        elif action == "unbind" and current is not None and current.spec.node_name:
            state.unbind_pod(current)
        elif action == "finish" and current is not None:
            status = {"phase": "Succeeded"}
            doc = {**_pod(i), "status": status}
            if current.spec.node_name:
                doc["spec"]["nodeName"] = current.spec.node_name
            state.put_pod(decode(doc))  # type: ignore[arg-type]
        elif action == "delete":
            if current is None:
                state.put_pod(PODS[i])  # type: ignore[arg-type]
            else:
                state.delete_pod(key)
        elif action == "repod" and current is not None:
            # The same pod with other labels (a watch's update), where it is.
            doc = _pod(i)
            doc["metadata"]["labels"] = {"app": APPS[(i + n) % 3], "rev": "2"}
            if current.spec.node_name:
                doc["spec"]["nodeName"] = current.spec.node_name
            state.put_pod(decode(doc))  # type: ignore[arg-type]
        elif action == "relabel" and name in state.nodes:
            old = state.nodes[name]
            labels = {**old.metadata.labels, ZONE: ZONES[(i + n) % 3]}
            doc = node(name, labels=labels)
            new = decode(doc)
            assert isinstance(new, Node)
            state.add_node(new)
        elif action == "everywhere":
            state.touch("*")  # a cluster-wide change: the kept sums start over (first passes)
        elif action == "fork":
            state.fork()
            depth += 1
        elif action == "revert" and depth:
            state.revert()
            depth -= 1
        elif action == "commit" and depth:
            state.commit()
            depth -= 1
        # Ask now and then, so the kept sums see the changes in pieces.
        if i % 3 == 0:
            _answers(kept, state)
        held, with_affinity = _expected_index(state)
        assert {n: set(k) for n, k in state.node_pods.items() if k} == held
        assert dict(state.affinity_pods.items()) == with_affinity
    fresh = (InterPodAffinity(), PodTopologySpread())
    assert _answers(kept, state) == _answers(fresh, state)
