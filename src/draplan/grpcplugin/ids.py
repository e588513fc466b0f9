"""Cluster Autoscaler's node-group ids, as its cloud providers' `NodeGroup.Id()` writes them.

An id is an id, never an object name: it names the group to CA, and draplan finds the pool it
stands for by what the id says.
- clusterapi: `<Kind>/<namespace>/<name>` for a MachineDeployment, MachineSet or MachinePool
  (`cloudprovider/clusterapi/clusterapi_unstructured.go`, `unstructuredScalableResource.ID`:
  `path.Join(kind, namespace, name)`).
- GCE: the managed instance group's URL,
  `https://www.googleapis.com/compute/v1/projects/<p>/zones/<z>/instanceGroups/<name>`
  (`cloudprovider/gce/gce_url.go`, `GenerateMigUrl`); a GKE node pool's MIG is named
  `gke-<cluster>-<node pool>-<8 hex>-grp`.
- AWS: the Auto Scaling group's name (`cloudprovider/aws`, `AwsNodeGroup.Id`); an EKS managed
  node group's is `eks-<node group>-<uuid>`.
- Azure: the scale set's name (`cloudprovider/azure`, `ScaleSet.Id`); an AKS node pool's is
  `aks-<node pool>-<digits>-vmss`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The node-group labels `GroupId.node_group_label` is asked about, named here for its callers.
from draplan.cluster.nodepools import EKS_NODEGROUP as EKS_NODEGROUP
from draplan.cluster.nodepools import GKE_NODEPOOL as GKE_NODEPOOL

CAPI_KINDS = ("MachineDeployment", "MachineSet", "MachinePool")
_CAPI = re.compile(r"^(MachineDeployment|MachineSet|MachinePool)/([^/]+)/([^/]+)$")
_MIG = re.compile(
    r"^https://[a-z.]*googleapis\.com/compute/v1/projects/([^/]+)/(?:zones|regions)/([^/]+)"
    r"/instanceGroups/([^/]+)$"
)
_GKE_MIG = re.compile(r"^gke-(.+)-[0-9a-f]{8}-grp$")
_EKS_ASG = re.compile(r"^eks-(.+)-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$")
_AKS_VMSS = re.compile(r"^aks-([a-z0-9]+)-\d+-vmss$")

AKS_AGENTPOOL = "kubernetes.azure.com/agentpool"


@dataclass(frozen=True)
class GroupId:
    """A parsed node-group id: the provider that wrote it, the group's kind, namespace and
    name where the id carries them."""

    raw: str
    provider: str  # clusterapi, gce, or "" (an ASG or scale-set name: AWS, Azure, others)
    kind: str = ""  # clusterapi: MachineDeployment, MachineSet or MachinePool
    namespace: str = ""  # clusterapi
    name: str = ""  # the group's own name: the resource's, the MIG's, the ASG's or VMSS's

    def node_group_label(self, key: str, value: str) -> bool:
        """Whether nodes labelled `key=value` are this group's by the provider's naming: an
        EKS node group's ASG, a GKE node pool's MIG, an AKS node pool's scale set."""
        name = self.name
        if key == EKS_NODEGROUP:
            found = _EKS_ASG.match(name)
            return found is not None and found.group(1) == value
        if key == GKE_NODEPOOL:
            found = _GKE_MIG.match(name)
            return found is not None and found.group(1).endswith(f"-{value}")
        if key in (AKS_AGENTPOOL, "agentpool"):
            found = _AKS_VMSS.match(name)
            return found is not None and found.group(1) == value
        return False

    def __str__(self) -> str:
        return self.raw


def parse(raw: str) -> GroupId:
    """The id as its provider wrote it; any other text is a plain group name."""
    found = _CAPI.match(raw)
    if found:
        kind, namespace, name = found.groups()
        return GroupId(raw, "clusterapi", kind, namespace, name)
    found = _MIG.match(raw)
    if found:
        return GroupId(raw, "gce", name=found.group(3))
    return GroupId(raw, "", name=raw)
