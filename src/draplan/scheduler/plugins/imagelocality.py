"""ImageLocality: prefer nodes that already hold the pod's container images (image_locality.go).

A node's score is the sum, over the pod's init and app containers whose image the node lists
in status.images, of the image's size scaled by the share of all nodes that have it (an image
on every node adds its size, on one node of ten a tenth), clamped to [23 MiB, 1000 MiB per
container] and mapped to 0..100. That share reads every node, so this is a cluster plugin
(scheduler.framework); the nodes' images are counted once per state and kept current through
its change log. Image names are matched as upstream matches them: the pod's name with
":latest" added when it has no tag, against the names the kubelet reported. Upstream sizes an
image by the first node that reported it; draplan by each node's own report.
"""

from __future__ import annotations

from collections.abc import Sequence

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SKIP, SUCCESS, CycleState, PodInfo, Status
from draplan.scheduler.plugins.names import IMAGE_LOCALITY

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
MAX_NODE_SCORE = 100


def normalized_image_name(name: str) -> str:
    """normalizedImageName: ":latest" when the last ':' is not after the last '/'."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


def calculate_priority(total: int, containers: int) -> int:
    """calculatePriority: the summed scaled sizes clamped and mapped to 0..100."""
    high = MAX_CONTAINER_THRESHOLD * containers
    total = min(max(total, MIN_THRESHOLD), high)
    return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (high - MIN_THRESHOLD)


def node_images(node: Node) -> dict[str, int]:
    """The image names the kubelet reported and their sizes."""
    return {name: image.size_bytes for image in node.status.images for name in image.names}


def pod_images(pod: Pod) -> list[str]:
    return [
        normalized_image_name(c.image) for c in (*pod.spec.init_containers, *pod.spec.containers)
    ]


class ImageCensus:
    """How many nodes of a state list each image name, kept current through its change log."""

    def __init__(self) -> None:
        self.nodes: dict[str, int] = {}  # image name -> nodes listing it
        self.total = 0
        self._seen: dict[str, tuple[Node, dict[str, int]]] = {}
        self._state: ClusterState | None = None
        self._cursor = -1

    def sync(self, state: ClusterState) -> None:
        tail = state.changed_since(self._cursor) if state is self._state else None
        self._cursor = len(state.change_log)
        if state is not self._state:
            self._state = state
            self.nodes.clear()
            self._seen.clear()
            self.total = 0
        names = tail if tail is not None else list(dict.fromkeys([*self._seen, *state.nodes]))
        for name in names:
            self._update(name, state.nodes.get(name))

    def _update(self, name: str, node: Node | None) -> None:
        seen = self._seen.get(name)
        if seen is not None and seen[0] is node:
            return
        if seen is not None:
            self.total -= 1
            for image in seen[1]:
                self.nodes[image] -= 1
                if not self.nodes[image]:
                    del self.nodes[image]
            del self._seen[name]
        if node is not None:
            images = node_images(node)
            self._seen[name] = (node, images)
            self.total += 1
            for image in images:
                self.nodes[image] = self.nodes.get(image, 0) + 1

    def images_of(self, name: str) -> dict[str, int]:
        return self._seen[name][1]


class ImageLocality:
    name = IMAGE_LOCALITY
    cluster = True

    def __init__(self) -> None:
        self.census = ImageCensus()

    def pre_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, nodes: Sequence[Node]
    ) -> Status:
        """No upstream PreScore: draplan's, which says SKIP when no node has any of the pod's
        images (every score is then 0)."""
        self.census.sync(state)
        wanted = pod_images(pod.pod)
        if not any(image in self.census.nodes for image in wanted):
            return SKIP
        cycle.data[self.name] = wanted
        return SUCCESS

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        census = self.census
        images = census.images_of(node.metadata.name)
        total = 0
        for image in cycle.data[self.name]:
            size = images.get(image)
            if size is not None:
                # scaledImageScore: int64(float64(size) * float64(numNodes)/float64(total)).
                total += int(size * (census.nodes[image] / census.total))
        return calculate_priority(total, len(cycle.data[self.name]))
