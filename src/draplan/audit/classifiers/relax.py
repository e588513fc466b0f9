"""Fixes that lift what keeps a pod off a node: tolerations for its taints, an uncordon, alone
or with a new node of the host's kind or pool. A pod's node selector and affinity are its
owner's choice: a host they exclude is out of the pod's scope, never a fix to offer."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from draplan.api.core_v1 import Pod, Toleration
from draplan.audit.diagnosis import Proposals
from draplan.audit.fixes import Fix
from draplan.audit.reach import Host
from draplan.audit.view import NEAREST


def fixable(hosts: list[Host]) -> list[Host]:
    """The hosts that a toleration or an uncordon opens to the pod (its node selector and
    affinity admit them)."""
    return [h for h in hosts if h.blocks is not None and not h.blocks.selector]


def relaxation(host: Host) -> Fix | None:
    """What opens the host to the pod: tolerations for its taints, an uncordon; None when
    its node selector or affinity excludes the host."""
    b = host.blocks
    if b is None or b.selector:
        return None
    texts, actions = [], []
    tolerations = tuple(Toleration(key=t.key, operator="Exists", effect=t.effect) for t in b.taints)
    if tolerations:
        keys = sorted({t.key for t in tolerations})
        texts.append(f"add a toleration for {' and '.join(keys)}")
        actions.append("add a toleration")
    uncordon = (host.node,) if b.cordoned and not host.pool else ()
    if uncordon:
        texts.append(f"uncordon {host.node}")
        actions.append("uncordon the node")
    if not texts or (b.cordoned and host.pool):
        return None
    return Fix(
        " and ".join(texts), " and ".join(actions), tolerations=tolerations, uncordon=uncordon
    )


def relaxations(hosts: list[Host]) -> Proposals:
    """The relaxations of the hosts' constraints alone, then each with a new node of the
    host's kind (or of its pool), in the hosts' order."""

    def proposals(pod: Pod) -> Iterator[Fix]:
        alone: list[Fix] = []
        with_node: list[Fix] = []
        for host in hosts:
            if len(with_node) >= NEAREST:
                break  # the hosts are in order: the first few are the ones to offer
            fix = relaxation(host)
            if fix is None:
                continue
            if fix not in alone and len(alone) < NEAREST:
                alone.append(fix)
            if host.blocks is not None and host.blocks.cordoned:
                continue  # a cordoned node is uncordoned (above), not copied
            if host.pool:
                more = dataclasses.replace(
                    fix,
                    text=f"{fix.text} so that pool {host.pool} adds a node for it",
                    action=f"{fix.action} and add a node of the pool",
                    add=1,
                    pool=host.pool,
                )
            else:
                more = dataclasses.replace(
                    fix,
                    text=f"{fix.text} and add a node like {host.node}",
                    action=f"{fix.action} and add a node",
                    add=1,
                    like=host.node,
                )
            if more not in with_node and len(with_node) < NEAREST:
                with_node.append(more)
        yield from alone
        yield from with_node

    return proposals
