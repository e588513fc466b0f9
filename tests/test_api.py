"""The typed object model: round trips, tolerance of unknown fields, immutability, validation."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from draplan.api import core_v1, resource_v1
from draplan.api.codec import KINDS, decode, encode, to_builtins
from draplan.api.errors import BadInput
from draplan.api.quantity import Quantity

META = {
    "name": "obj",
    "uid": "0b6c5e4e-7f55-4a43-9f0e-2f3c1b0f6a11",
    "resourceVersion": "4711",
    "creationTimestamp": "2025-06-01T10:00:00Z",
    "labels": {"team": "ml"},
}
NS_META = {**META, "namespace": "default"}

CLAIM_SPEC = {
    "devices": {
        "requests": [
            {
                "name": "gpu",
                "exactly": {
                    "deviceClassName": "gpu.nvidia.com",
                    "selectors": [
                        {
                            "cel": {
                                "expression": "device.capacity['gpu.nvidia.com'].memory"
                                ".compareTo(quantity('40Gi')) >= 0"
                            }
                        }
                    ],
                    "count": 2,
                    "tolerations": [
                        {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                },
            },
            {
                "name": "nic",
                "firstAvailable": [
                    {"name": "rdma", "deviceClassName": "rdma.dra.net", "count": 1},
                    {
                        "name": "any",
                        "deviceClassName": "nic.dra.net",
                        "allocationMode": "All",
                        "capacity": {"requests": {"bandwidth": "10G"}},
                    },
                ],
            },
        ],
        "constraints": [
            {"requests": ["gpu", "nic/rdma"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
        ],
        "config": [
            {
                "requests": ["gpu"],
                "opaque": {"driver": "gpu.nvidia.com", "parameters": {"sharing": "TimeSlicing"}},
            }
        ],
    }
}

POD_SPEC = {
    "nodeName": "h100-0",
    "schedulingGates": [{"name": "example.com/quota"}],
    "preemptionPolicy": "Never",
    "nodeSelector": {"nvidia.com/gpu.present": "true"},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["us-east-1a"],
                            }
                        ]
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]},
                }
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "trainer"}},
                    "topologyKey": "topology.kubernetes.io/zone",
                    "namespaceSelector": {
                        "matchExpressions": [{"key": "team", "operator": "In", "values": ["ml"]}]
                    },
                    "matchLabelKeys": ["job"],
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "trainer"}},
                        "namespaces": ["ml", "research"],
                        "topologyKey": "kubernetes.io/hostname",
                        "mismatchLabelKeys": ["job"],
                    },
                }
            ]
        },
    },
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "trainer"}},
            "minDomains": 3,
            "nodeAffinityPolicy": "Ignore",
            "nodeTaintsPolicy": "Honor",
            "matchLabelKeys": ["pod-template-hash"],
        }
    ],
    "initContainers": [
        {"name": "proxy", "restartPolicy": "Always", "ports": [{"containerPort": 15001}]}
    ],
    "containers": [
        {
            "name": "trainer",
            "image": "ghcr.io/example/trainer:1.2",
            "resources": {
                "requests": {"cpu": "8", "memory": "64Gi"},
                "limits": {"memory": "64Gi"},
                "claims": [{"name": "gpus", "request": "gpu"}],
            },
            "ports": [
                {
                    "name": "metrics",
                    "containerPort": 9400,
                    "hostPort": 9400,
                    "protocol": "TCP",
                    "hostIP": "10.0.0.1",
                }
            ],
        }
    ],
    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "train-gpus"}],
    "priority": 1000,
    "priorityClassName": "training",
    "schedulerName": "default-scheduler",
}

# One realistic object per kind, in the canonical form the API server prints (quantities
# canonical, no fields at their zero value, which the codec omits).
OBJECTS: dict[tuple[str, str], dict[str, Any]] = {
    ("v1", "Node"): {
        "metadata": {**META, "name": "h100-0"},
        "spec": {
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "present"}],
            "unschedulable": True,
        },
        "status": {
            "capacity": {"cpu": "192", "memory": "2Ti", "pods": "110"},
            "allocatable": {"cpu": "191500m", "memory": "2047Gi", "pods": "110"},
        },
    },
    ("v1", "Pod"): {
        "metadata": {**NS_META, "name": "trainer-0"},
        "spec": POD_SPEC,
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient cpu.",
                    "lastTransitionTime": "2025-06-01T10:00:00Z",
                }
            ],
            "nominatedNodeName": "h100-0",
            "startTime": "2025-06-01T10:00:00Z",
            "resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "trainer-0-gpus-x7k"}],
        },
    },
    ("v1", "PodTemplate"): {
        "metadata": {**NS_META, "name": "workers"},
        "template": {"metadata": {"labels": {"app": "trainer"}}, "spec": POD_SPEC},
    },
    ("v1", "Namespace"): {
        "metadata": {
            **META,
            "name": "ml",
            "labels": {"resource.kubernetes.io/admin-access": "true"},
        }
    },
    ("v1", "Service"): {
        "metadata": {**NS_META, "name": "inference"},
        "spec": {"selector": {"app": "inference"}},
    },
    ("v1", "ReplicationController"): {
        "metadata": {**NS_META, "name": "legacy"},
        "spec": {
            "selector": {"app": "legacy"},
            "template": {"metadata": {"labels": {"app": "legacy"}}},
        },
    },
    ("apps/v1", "ReplicaSet"): {
        "metadata": {**NS_META, "name": "inference-7d9f8"},
        "spec": {
            "selector": {
                "matchLabels": {"app": "inference", "pod-template-hash": "7d9f8"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["batch"]}],
            }
        },
    },
    ("apps/v1", "StatefulSet"): {
        "metadata": {**NS_META, "name": "etcd"},
        "spec": {"selector": {"matchLabels": {"app": "etcd"}}},
    },
    ("v1", "ConfigMap"): {
        "metadata": {**NS_META, "name": "pools", "labels": {"draplan.io/node-pools": "true"}},
        "data": {"pools.yaml": "kind: NodePool\n"},
        "binaryData": {"blob": "AAE="},
        "immutable": True,
    },
    ("resource.k8s.io/v1", "DeviceClass"): {
        "metadata": {**META, "name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"mode": "x"}}}],
            "extendedResourceName": "nvidia.com/gpu",
        },
    },
    ("resource.k8s.io/v1", "ResourceSlice"): {
        "metadata": {**META, "name": "h100-0-gpu"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "pool": {"name": "h100-0", "generation": 3, "resourceSliceCount": 1},
            "nodeName": "h100-0",
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {
                        "index": {"int": 0},
                        "productName": {"string": "NVIDIA H100 80GB HBM3"},
                        "driverVersion": {"version": "550.54.15"},
                        "mig": {"bool": False},
                        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                    "taints": [
                        {
                            "key": "gpu.nvidia.com/ecc",
                            "effect": "NoSchedule",
                            "value": "degraded",
                            "timeAdded": "2025-06-01T10:00:00Z",
                        }
                    ],
                },
                {
                    "name": "gpu-1",
                    "attributes": {"index": {"int": 1}},
                    "capacity": {
                        "memory": {
                            "value": "80Gi",
                            "requestPolicy": {
                                "default": "10Gi",
                                "validRange": {"min": "10Gi", "max": "80Gi", "step": "10Gi"},
                            },
                        }
                    },
                    "allowMultipleAllocations": True,
                    "bindsToNode": True,
                    "bindingConditions": ["Attached"],
                    "bindingFailureConditions": ["AttachFailed"],
                },
            ],
        },
    },
    ("resource.k8s.io/v1", "ResourceClaim"): {
        "metadata": {**NS_META, "name": "train"},
        "spec": CLAIM_SPEC,
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.nvidia.com",
                            "pool": "h100-0",
                            "device": "gpu-1",
                            "tolerations": [
                                {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}
                            ],
                            "shareID": "5f1c1a52-3f8b-4f7e-9a43-6c1e2d3b4a5f",
                            "consumedCapacity": {"memory": "10Gi"},
                        },
                        {
                            "request": "nic/rdma",
                            "driver": "dra.net",
                            "pool": "h100-0",
                            "device": "nic-0",
                            "adminAccess": True,
                        },
                    ],
                    "config": [
                        {
                            "source": "FromClaim",
                            "requests": ["gpu"],
                            "opaque": {
                                "driver": "gpu.nvidia.com",
                                "parameters": {"sharing": "TimeSlicing"},
                            },
                        }
                    ],
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["h100-0"]}
                            ]
                        }
                    ]
                },
                "allocationTimestamp": "2025-06-01T10:00:05Z",
            },
            "reservedFor": [{"resource": "pods", "name": "trainer-0", "uid": "a1b2"}],
        },
    },
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): {
        "metadata": {**NS_META, "name": "train-gpus"},
        "spec": {"metadata": {"labels": {"app": "trainer"}}, "spec": CLAIM_SPEC},
    },
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        "metadata": {**META, "name": "training"},
        "value": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "batch training",
    },
    ("policy/v1", "PodDisruptionBudget"): {
        "metadata": {**NS_META, "name": "trainer"},
        "spec": {
            "maxUnavailable": "25%",
            "selector": {
                "matchLabels": {"app": "trainer"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["dev"]}],
            },
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
        "status": {
            "observedGeneration": 2,
            "disruptedPods": {"trainer-3": "2025-06-01T10:00:00Z"},
            "disruptionsAllowed": 1,
            "currentHealthy": 4,
            "desiredHealthy": 3,
            "expectedPods": 4,
        },
    },
    ("scheduling.k8s.io/v1alpha1", "Workload"): {
        "metadata": {**NS_META, "name": "llm"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "llm"},
            "podGroups": [
                {"name": "workers", "policy": {"gang": {"minCount": 8}}},
                {"name": "launcher", "policy": {"basic": {}}},
            ],
        },
    },
    ("scheduling.k8s.io/v1alpha2", "Workload"): {
        "metadata": {**NS_META, "name": "llm"},
        "spec": {
            "podGroupTemplates": [
                {
                    "name": "workers",
                    "schedulingPolicy": {"gang": {"minCount": 8}},
                    "schedulingConstraints": {"topology": [{"key": "nvidia.com/gpu.clique"}]},
                    "priorityClassName": "training",
                }
            ]
        },
    },
    ("scheduling.k8s.io/v1alpha2", "PodGroup"): {
        "metadata": {**NS_META, "name": "llm-workers"},
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": "llm", "podGroupTemplateName": "workers"}
            },
            "schedulingPolicy": {"gang": {"minCount": 8}},
        },
        "status": {
            "conditions": [
                {
                    "type": "Scheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": "2025-06-01T10:00:00Z",
                }
            ]
        },
    },
    ("resource.k8s.io/v1", "DeviceTaintRule"): {
        "metadata": {"name": "gpu-0-maintenance"},
        "spec": {
            "deviceSelector": {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0"},
            "taint": {
                "key": "example.com/maintenance",
                "value": "firmware",
                "effect": "NoExecute",
                "timeAdded": "2026-09-01T10:00:00Z",
            },
        },
        "status": {
            "conditions": [
                {
                    "type": "EvictionInProgress",
                    "status": "False",
                    "reason": "Completed",
                    "lastTransitionTime": "2026-09-01T10:05:00Z",
                }
            ]
        },
    },
    ("resource.k8s.io/v1alpha3", "ResourcePoolStatusRequest"): {
        "metadata": {"name": "check-gpus"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "poolName": "node-1",
            "limit": 10,
            "defaultPartitionTypeAttribute": "gpu.nvidia.com/profile",
        },
        "status": {
            "poolCount": 1,
            "pools": [
                {
                    "driver": "gpu.nvidia.com",
                    "poolName": "node-1",
                    "generation": 2,
                    "resourceSliceCount": 2,
                    "totalDevices": 3,
                    "allocatedDevices": 1,
                    "availableDevices": 2,
                    "unavailableDevices": 0,
                    "nodeName": "node-1",
                    "partitionSummary": [
                        {
                            "attribute": "gpu.nvidia.com/profile",
                            "type": "1g.10gb",
                            "total": 2,
                            "allocatable": 0,
                        }
                    ],
                    "shareableSummary": {
                        "fullyAvailableDevices": 0,
                        "partiallyAvailableDevices": 1,
                        "capacity": [
                            {
                                "name": "memory",
                                "total": "40Gi",
                                "consumed": "10Gi",
                                "available": "30Gi",
                            }
                        ],
                    },
                }
            ],
            "conditions": [
                {
                    "type": "Complete",
                    "status": "True",
                    "reason": "CalculationComplete",
                    "lastTransitionTime": "2026-09-01T10:05:00Z",
                }
            ],
        },
    },
    ("scheduling.k8s.io/v1beta1", "Workload"): {
        "metadata": {**NS_META, "name": "llm"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "llm"},
            "podGroupTemplates": [
                {
                    "name": "workers",
                    "schedulingPolicy": {"gang": {"minCount": 8}},
                    "schedulingConstraints": {"topology": [{"key": "nvidia.com/gpu.clique"}]},
                    "priorityClassName": "training",
                    "priority": 1000,
                    "resourceClaims": [
                        {"name": "imex", "resourceClaimTemplateName": "imex-channel"}
                    ],
                    "disruptionMode": {"all": {}},
                    "preemptionPolicy": "Never",
                }
            ],
        },
    },
    ("scheduling.k8s.io/v1beta1", "PodGroup"): {
        "metadata": {**NS_META, "name": "llm-workers"},
        "spec": {
            "workloadRef": {"workloadName": "llm", "templateName": "workers"},
            "schedulingPolicy": {"gang": {"minCount": 8}},
            "resourceClaims": [{"name": "imex", "resourceClaimName": "llm-imex"}],
            "disruptionMode": {"single": {}},
        },
        "status": {
            "conditions": [
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": "2026-09-01T10:00:00Z",
                }
            ]
        },
    },
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): {
        "metadata": {**NS_META, "name": "llm"},
        "spec": {
            "minMember": 8,
            "minResources": {"cpu": "64", "nvidia.com/gpu": "64"},
            "scheduleTimeoutSeconds": 600,
        },
    },
    ("autoscaling.x-k8s.io/v1", "ProvisioningRequest"): {
        "metadata": {**NS_META, "name": "llm-capacity"},
        "spec": {
            "podSets": [{"podTemplateRef": {"name": "workers"}, "count": 8}],
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "parameters": {"ValidUntilSeconds": "600"},
        },
        "status": {"conditions": [{"type": "Provisioned", "status": "True"}]},
    },
    ("kueue.x-k8s.io/v1beta1", "Workload"): {
        "metadata": {
            **NS_META,
            "name": "job-trainer-3f2a1",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "trainer", "uid": "u-1"}
            ],
        },
        "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 4}]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "h100"}}],
            },
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
        },
    },
    ("draplan.io/v1alpha1", "NodePool"): {
        "metadata": {**META, "name": "p5"},
        "spec": {
            "minNodes": 0,
            "maxNodes": 16,
            "pricePerHour": "98.32",
            "provisioningDelaySeconds": 300,
            "priority": 10,
            "topology": [{"key": "nvidia.com/gpu.clique", "nodesPerDomain": 8}],
            "template": {
                "metadata": {"labels": {"node.kubernetes.io/instance-type": "p5.48xlarge"}},
                "status": {"allocatable": {"cpu": "192", "memory": "2Ti"}},
            },
            "resourceSlices": [
                {
                    "driver": "gpu.nvidia.com",
                    "pool": {"name": "$NODE_NAME", "generation": 1, "resourceSliceCount": 1},
                    "nodeName": "$NODE_NAME",
                    "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": "80Gi"}}}],
                }
            ],
        },
    },
    ("v1", "Binding"): {
        "metadata": {"name": "train-0", "namespace": "ml", "uid": "u-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    },
    ("draplan.io/v1alpha1", "Scenario"): {
        "metadata": {**META, "name": "demo"},
        "spec": {
            "seed": 7,
            "policies": ["legacy", "dra+gang-atomic"],
            "horizonSeconds": 3600.0,
            "workload": {
                "synthetic": {"jobs": 12, "arrivalsPerHour": 20.0},
                "jobs": [
                    {
                        "name": "j1",
                        "arrivalSeconds": 5.0,
                        "durationSeconds": 60.0,
                        "workloadClass": "training",
                        "objects": [
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "metadata": {"name": "p", "namespace": "default"},
                            }
                        ],
                    }
                ],
            },
        },
    },
    ("draplan.io/v1alpha1", "SchedulerProfile"): {
        "metadata": {**META, "name": "gpu-packing"},
        "spec": {
            "scorePlugins": [{"name": "MostAllocated", "weight": 2}, {"name": "TopologyLocality"}],
            "disabledPlugins": ["NodeUnschedulable"],
            "deviceOrder": "first-fit",
            "filterTimeoutSeconds": 2.5,
        },
    },
}
OBJECTS[("karpenter.sh/v1", "NodePool")] = {
    "metadata": {"name": "gpu"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "ml"}},
            "spec": {
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["p5.48xlarge"],
                    },
                    {
                        "key": "karpenter.k8s.aws/instance-gpu-count",
                        "operator": "Gt",
                        "values": ["4"],
                        "minValues": 1,
                    },
                ],
                "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "present"}],
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu",
                },
                "expireAfter": "720h",
            },
        },
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "10m",
            "budgets": [{"nodes": "1"}],
        },
        "limits": {"cpu": "1k", "nvidia.com/gpu": "16"},
        "weight": 10,
    },
    "status": {"resources": {"cpu": "192"}},
}
OBJECTS[("karpenter.sh/v1", "NodeClaim")] = {
    "metadata": {"name": "gpu-abcde", "labels": {"karpenter.sh/nodepool": "gpu"}},
    "spec": {
        "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]}],
        "resources": {"requests": {"cpu": "32", "pods": "1"}},
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
    },
}
OBJECTS[("cluster.x-k8s.io/v1beta2", "MachineDeployment")] = {
    "metadata": {
        **NS_META,
        "name": "gpu-workers",
        "annotations": {
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "4",
            "capacity.cluster-autoscaler.kubernetes.io/cpu": "64",
            "capacity.cluster-autoscaler.kubernetes.io/memory": "512Gi",
            "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "4",
            "capacity.cluster-autoscaler.kubernetes.io/dra-driver": "gpu.nvidia.com",
        },
    },
    "spec": {
        "clusterName": "prod",
        "replicas": 0,
        "template": {
            "metadata": {"labels": {"node-role.kubernetes.io/gpu": ""}},
            "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        },
    },
}
OBJECTS[("cluster.x-k8s.io/v1beta2", "MachinePool")] = {
    "metadata": {
        **NS_META,
        "name": "gpu-pool",
        "annotations": {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "3"},
    },
    "spec": {"clusterName": "prod", "replicas": 1, "providerIDList": ["aws:///us-west-2a/i-0abc"]},
}
for _kind in ("MachineDeployment", "MachinePool"):
    OBJECTS[("cluster.x-k8s.io/v1beta1", _kind)] = OBJECTS[("cluster.x-k8s.io/v1beta2", _kind)]
# Kueue's v1beta2 Workload has v1beta1's fields that draplan reads.
OBJECTS[("kueue.x-k8s.io/v1beta2", "Workload")] = OBJECTS[("kueue.x-k8s.io/v1beta1", "Workload")]
# scheduling.k8s.io/v1alpha3 serves v1beta1's shape (1.37 releases before the beta).
for _kind in ("Workload", "PodGroup"):
    OBJECTS[("scheduling.k8s.io/v1alpha3", _kind)] = OBJECTS[("scheduling.k8s.io/v1beta1", _kind)]
# minNodes 0 is the zero value and is omitted when encoding.
OBJECTS[("draplan.io/v1alpha1", "NodePool")]["spec"].pop("minNodes")


def full(key: tuple[str, str]) -> dict[str, Any]:
    api_version, kind = key
    return {"apiVersion": api_version, "kind": kind, **copy.deepcopy(OBJECTS[key])}


def test_every_kind_has_a_round_trip_case() -> None:
    assert set(OBJECTS) == set(KINDS)


@pytest.mark.parametrize("key", sorted(KINDS), ids=lambda k: f"{k[0]}/{k[1]}")
def test_round_trip(key: tuple[str, str]) -> None:
    doc = full(key)
    obj = decode(doc, source="x.yaml")
    assert type(obj) is KINDS[key]
    encoded = encode(obj)
    assert encoded == doc
    assert list(encoded)[:2] == ["apiVersion", "kind"]
    assert decode(encoded) == obj


def test_node_provider_id_uses_the_kubernetes_spelling() -> None:
    doc = full(("v1", "Node"))
    doc["spec"]["providerID"] = "aws:///us-east-1a/i-0abc"
    node = decode(doc)
    assert isinstance(node, core_v1.Node)
    assert node.spec.provider_id == "aws:///us-east-1a/i-0abc"
    assert encode(node) == doc


def test_decode_gives_typed_values() -> None:
    rs = decode(full(("resource.k8s.io/v1", "ResourceSlice")))
    assert isinstance(rs, resource_v1.ResourceSlice)
    gpu0, gpu1 = rs.spec.devices
    assert gpu0.attributes["index"] == resource_v1.DeviceAttribute(int_=0)
    assert gpu0.attributes["mig"].value() is False
    assert gpu0.attributes["driverVersion"].type_name() == "version"
    assert gpu0.capacity["memory"].value == Quantity("80Gi")
    assert gpu0.capacity["memory"].value == Quantity("85899345920")
    policy = gpu1.capacity["memory"].request_policy
    assert policy is not None and policy.valid_range is not None
    assert policy.valid_range.step == Quantity("10Gi")
    assert rs.metadata.creation_timestamp == "2025-06-01T10:00:00Z"


def test_quantities_print_canonically() -> None:
    node = decode(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {"allocatable": {"memory": "1024Mi", "cpu": "1000m", "pods": 110}},
        }
    )
    assert encode(node)["status"]["allocatable"] == {"memory": "1Gi", "cpu": "1", "pods": "110"}


def test_unknown_fields_are_ignored() -> None:
    doc = full(("resource.k8s.io/v1", "ResourceSlice"))
    noisy = copy.deepcopy(doc)
    noisy["metadata"]["managedFields"] = [{"manager": "kubelet", "operation": "Update"}]
    noisy["spec"]["futureField"] = {"nested": [1, 2, 3]}
    noisy["spec"]["devices"][0]["attributes"]["index"]["floats"] = [0.5, 1.5]
    noisy["spec"]["devices"][0]["somethingNew"] = True
    noisy["status"] = {"whatever": "x"}
    obj = decode(noisy)
    assert obj == decode(doc)
    assert encode(obj) == doc


def test_objects_are_frozen() -> None:
    rs = decode(full(("resource.k8s.io/v1", "ResourceSlice")))
    assert isinstance(rs, resource_v1.ResourceSlice)
    with pytest.raises(AttributeError):
        rs.spec = rs.spec  # type: ignore[misc]
    with pytest.raises(AttributeError):
        rs.spec.devices[0].name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        rs.spec.devices[0] = rs.spec.devices[1]  # type: ignore[index]
    with pytest.raises(AttributeError):
        rs.metadata.name = "other"  # type: ignore[misc]


def test_value_types_are_hashable() -> None:
    a = resource_v1.DeviceAttribute(string="h100")
    assert hash(a) == hash(resource_v1.DeviceAttribute(string="h100"))
    assert (
        len({a, resource_v1.DeviceAttribute(string="h100"), resource_v1.DeviceAttribute(int_=1)})
        == 2
    )
    req = core_v1.NodeSelectorRequirement(key="rack", operator="In", values=("a", "b"))
    same = core_v1.NodeSelectorRequirement(key="rack", operator="In", values=("a", "b"))
    assert {req: 1}[same] == 1
    term = core_v1.NodeSelectorTerm(match_expressions=(req,))
    assert hash(term) == hash(core_v1.NodeSelectorTerm(match_expressions=(same,)))
    tol = resource_v1.DeviceToleration(key="k", operator="Exists")
    assert tol in {resource_v1.DeviceToleration(key="k", operator="Exists")}
    assert hash(Quantity("1Gi")) == hash(Quantity("1024Mi"))
    # A struct holding a dict is not hashable, as with any mutable mapping inside.
    with pytest.raises(TypeError):
        hash(
            resource_v1.Device(
                name="gpu-0", attributes={"index": resource_v1.DeviceAttribute(int_=0)}
            )
        )


def test_to_builtins_handles_containers_of_values() -> None:
    caps = {"memory": Quantity("80Gi"), "cores": Quantity("500m")}
    assert to_builtins([caps, resource_v1.DeviceAttribute(int_=3)]) == [
        {"memory": "80Gi", "cores": "500m"},
        {"int": 3},
    ]


# --- valid objects that validation must accept ---------------------------------------------


def slice_doc(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.nvidia.com",
            "pool": {"name": "pool-a", "generation": 1, "resourceSliceCount": 2},
            **spec,
        },
    }


def test_per_device_node_selection_is_valid() -> None:
    rs = decode(
        slice_doc(
            "fabric",
            perDeviceNodeSelection=True,
            devices=[
                {"name": "link-0", "nodeName": "node-1"},
                {"name": "link-1", "allNodes": True},
                {
                    "name": "link-2",
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "rack", "operator": "In", "values": ["a"]}
                                ]
                            }
                        ]
                    },
                },
            ],
        )
    )
    assert isinstance(rs, resource_v1.ResourceSlice)
    assert rs.spec.per_device_node_selection is True
    assert [d.node_name for d in rs.spec.devices] == ["node-1", None, None]
    assert rs.spec.devices[1].all_nodes is True
    assert rs.spec.devices[2].node_selector is not None


def test_shared_counters_and_consumption_are_valid() -> None:
    counters = decode(
        slice_doc(
            "counters",
            nodeName="node-1",
            sharedCounters=[
                {
                    "name": "gpu-0",
                    "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "98"}},
                }
            ],
        )
    )
    devices = decode(
        slice_doc(
            "partitions",
            nodeName="node-1",
            devices=[
                {
                    "name": f"gpu-0-mig-{i}",
                    "consumesCounters": [
                        {
                            "counterSet": "gpu-0",
                            "counters": {
                                "memory": {"value": "10Gi"},
                                "multiprocessors": {"value": "14"},
                            },
                        }
                    ],
                }
                for i in range(7)
            ],
        )
    )
    assert isinstance(counters, resource_v1.ResourceSlice)
    assert isinstance(devices, resource_v1.ResourceSlice)
    assert counters.spec.shared_counters[0].counters["memory"].value == Quantity("80Gi")
    consumed = devices.spec.devices[6].consumes_counters[0]
    assert consumed.counter_set == "gpu-0"
    assert consumed.counters["multiprocessors"].value == Quantity("14")


@pytest.mark.parametrize(
    "policy",
    [
        {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi", "80Gi"]},
        {"default": "20Gi", "validRange": {"min": "10Gi", "max": "80Gi", "step": "10Gi"}},
        {"default": "10Gi", "validRange": {"min": "10Gi"}},
        {"default": "5Gi"},
    ],
)
def test_request_policies_are_valid(policy: dict[str, Any]) -> None:
    rs = decode(
        slice_doc(
            "shared",
            nodeName="node-1",
            devices=[
                {
                    "name": "gpu-0",
                    "allowMultipleAllocations": True,
                    "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}},
                }
            ],
        )
    )
    assert isinstance(rs, resource_v1.ResourceSlice)
    got = rs.spec.devices[0].capacity["memory"].request_policy
    assert got is not None and got.default == Quantity(policy["default"])
    assert encode(rs)["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] == policy


def test_first_available_with_constraints_is_valid() -> None:
    claim = decode(full(("resource.k8s.io/v1", "ResourceClaim")))
    assert isinstance(claim, resource_v1.ResourceClaim)
    nic = claim.spec.devices.requests[1]
    assert nic.exactly is None
    assert [s.name for s in nic.first_available] == ["rdma", "any"]
    assert nic.first_available[1].allocation_mode == "All"
    assert nic.first_available[1].capacity is not None
    assert nic.first_available[1].capacity.requests["bandwidth"] == Quantity("10G")
    assert claim.spec.devices.constraints[0].requests == ("gpu", "nic/rdma")


def test_distinct_attribute_constraint_on_parent_request_is_valid() -> None:
    doc = full(("resource.k8s.io/v1", "ResourceClaim"))
    doc["spec"]["devices"]["constraints"] = [
        {"requests": ["nic"], "distinctAttribute": "dra.net/ifName"},
        {"matchAttribute": "gpu.nvidia.com/productName"},
    ]
    claim = decode(doc)
    assert isinstance(claim, resource_v1.ResourceClaim)
    assert claim.spec.devices.constraints[0].distinct_attribute == "dra.net/ifName"
    assert claim.spec.devices.constraints[1].requests == ()


def test_all_mode_without_count_and_empty_key_exists_toleration_are_valid() -> None:
    doc = full(("resource.k8s.io/v1", "ResourceClaim"))
    doc["spec"]["devices"]["requests"][0]["exactly"] = {
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "All",
        "tolerations": [{"operator": "Exists"}],
    }
    claim = decode(doc)
    assert isinstance(claim, resource_v1.ResourceClaim)
    exactly = claim.spec.devices.requests[0].exactly
    assert exactly is not None and exactly.count == 0 and exactly.tolerations[0].key == ""


def test_limits_at_the_boundary_are_valid() -> None:
    attrs: dict[str, dict[str, Any]] = {f"a{i}": {"int": i} for i in range(31)}
    attrs["long"] = {"string": "x" * 64}
    rs = decode(
        slice_doc(
            "big",
            nodeName="node-1",
            devices=[{"name": "d-0", "attributes": attrs}]
            + [{"name": f"d-{i}"} for i in range(1, 128)],
        )
    )
    assert isinstance(rs, resource_v1.ResourceSlice)
    assert len(rs.spec.devices) == 128
    assert len(rs.spec.devices[0].attributes) == 32


# --- errors from the codec -----------------------------------------------------------------


def bad(doc: dict[str, Any]) -> BadInput:
    with pytest.raises(BadInput) as info:
        decode(doc, source="in.yaml")
    return info.value


def test_decode_error_names_the_map_key() -> None:
    # msgspec writes `[...]` for a map key; the codec finds which entry failed.
    err = bad(
        slice_doc(
            "s",
            nodeName="node-1",
            devices=[
                {"name": "gpu-0", "capacity": {"memory": {"value": "80Gi"}}},
                {
                    "name": "gpu-1",
                    "capacity": {
                        "memory": {"value": "80Gi"},
                        "cores": {"value": "12XB"},
                        "other": {"value": "also bad"},
                    },
                },
            ],
        )
    )
    assert (err.kind, err.name, err.path) == (
        "ResourceSlice",
        "s",
        "spec.devices[1].capacity[cores].value",
    )
    assert err.message.startswith("invalid quantity '12XB': quantities must match")
    assert str(err).startswith(
        'in.yaml: ResourceSlice "s": spec.devices[1].capacity[cores].value: '
    )


def test_decode_error_names_nested_map_keys() -> None:
    doc = full(("resource.k8s.io/v1", "ResourceClaim"))
    doc["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
        "memory": "10Gi",
        "bandwidth": [1],
    }
    err = bad(doc)
    assert err.path == "status.allocation.devices.results[0].consumedCapacity[bandwidth]"
    assert "expected a quantity string, got list" in err.message


def test_decode_error_without_a_map_key() -> None:
    doc = full(("v1", "Pod"))
    doc["spec"]["containers"][0]["resources"]["claims"][0] = {"request": "gpu"}
    err = bad(doc)
    assert (err.kind, err.name) == ("Pod", "trainer-0")
    assert err.path == "spec.containers[0].resources.claims[0]"
    assert err.message == "object missing required field name"


def test_decode_rejects_non_objects_and_unknown_kinds() -> None:
    with pytest.raises(BadInput, match="expected an object, got list"):
        decode([], source="x")
    err = bad({"apiVersion": "v2", "kind": "Node", "metadata": {"name": "n"}})
    assert err.path == "apiVersion" and "supported: v1" in err.message
    err = bad({"apiVersion": "v1", "kind": "Nodes", "metadata": {"name": "n"}})
    assert err.path == "kind" and "unsupported kind 'Nodes'" in err.message


def test_msgspec_errors_become_bad_input() -> None:
    with pytest.raises(BadInput) as info:
        decode({"apiVersion": "v1", "kind": "Node", "metadata": "node-1"})
    assert info.value.path == "metadata"
    assert info.value.message == "expected object, got str"
    with pytest.raises(BadInput) as info:
        decode({"apiVersion": "v1", "kind": "Node", "spec": {"taints": [{"key": 1}]}})
    assert not isinstance(info.value, msgspec.ValidationError)
    assert info.value.path == "spec.taints[0].key"
    assert info.value.message == "expected str, got int"
