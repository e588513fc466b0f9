"""Validation remembers what it found valid (device names, attribute names, versions, label
pairs, quantities) so that 80,000 alike devices are not checked from scratch; what it says
about a slice must not depend on what it saw before. Property: a ResourceSlice of random
devices (TPU chips, Gaudi cards; some attributes invalid in each way the API server refuses)
gets the same verdict, word for word, with the memories empty and after valid slices like it
filled them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draplan.api import codec, validation
from draplan.api.codec import decode
from draplan.api.errors import BadInput
from scale_scenarios import resource_slice

GOOD_VALUES = (
    {"string": "tpu-v6e"},
    {"int": 3},
    {"bool": True},
    {"version": "1.2.3"},
    {"strings": ["a", "b"]},
)
BAD_VALUES = (
    {"string": "x" * 65},  # longer than 64
    {"int": 1 << 63},  # outside int64
    {"version": "v1.2.3"},  # not semver
    {"string": "a", "int": 1},  # two values
    {},  # none
    {"ints": []},  # an empty list
)
NAMES = ("model", "index", "google.com/slice", "resource.kubernetes.io/pcieRoot")
BAD_NAMES = ("Bad Name", "a" * 33, "UPPER.example.com/x")


def _device(name: str, attributes: dict[str, Any], policy: bool = False) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name, "attributes": attributes}
    if policy:  # a request policy without allowMultipleAllocations is refused
        device["capacity"] = {"hbm": {"value": "32Gi", "requestPolicy": {"default": "1Gi"}}}
    else:
        device["capacity"] = {"hbm": {"value": "32Gi"}}
    return device


def _slice(devices: list[dict[str, Any]]) -> dict[str, Any]:
    return resource_slice("tpu-node-0", devices, "tpu.google.com")


def _verdict(doc: dict[str, Any]) -> str:
    try:
        decode(doc, source="slice.yaml")
    except BadInput as err:
        return str(err)
    return "valid"


def _forget() -> None:
    for memory in (
        validation._QUALIFIED_NAMES,
        validation._VERSIONS,
        validation._ATTRIBUTES,
        validation._LABELS,
        validation._DEVICE_NAMES,
        validation._NAMES,
        validation._KEYS,
        codec._QUANTITIES,
    ):
        memory.clear()


attribute = st.tuples(st.sampled_from(NAMES + BAD_NAMES), st.sampled_from(GOOD_VALUES + BAD_VALUES))
device = st.tuples(
    st.sampled_from(("chip-0", "chip-1", "card-0", "Chip_2")),
    st.lists(attribute, max_size=4),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(device, min_size=1, max_size=4))
def test_a_slice_gets_the_same_verdict_whatever_was_seen_before(
    devices: list[tuple[str, list[tuple[str, dict[str, Any]]], bool]],
) -> None:
    doc = _slice([_device(n, dict(attrs), policy) for n, attrs, policy in devices])
    _forget()
    cold = _verdict(doc)
    # Valid devices like these first: every name and value they hold is remembered.
    names = {n: attrs for n, attrs, _ in devices if n != "Chip_2"}
    alike = [
        _device(n, {a: v for a, v in attrs if a in NAMES and v in GOOD_VALUES})
        for n, attrs in names.items()
    ]
    if alike:
        assert _verdict(_slice(alike)) == "valid"
    assert _verdict(doc) == cold


def test_a_remembered_device_name_does_not_excuse_a_bad_value() -> None:
    _forget()
    good = _slice([_device("chip-0", {"model": {"string": "tpu-v6e"}})])
    bad = _slice([_device("chip-0", {"model": {"string": "x" * 65}})])
    assert _verdict(good) == "valid"
    assert "spec.devices[0].attributes[model]" in _verdict(bad)


def _pod(namespace: str, annotation: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "tpu-job-0", "namespace": namespace, "annotations": {annotation: "x"}},
        "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]},
    }


@pytest.mark.parametrize(
    "bad",
    [
        _pod("ml.team", "tpu.google.com/slice"),  # a namespace is a DNS label
        _pod("ml", "tpu.google.com/slice/x"),  # two slashes in an annotation key
        _pod("ml", "tpu.google.com/slice", cpu="-1"),  # a negative request
    ],
)
def test_a_pod_gets_the_same_verdict_whatever_was_seen_before(bad: dict[str, Any]) -> None:
    _forget()
    cold = _verdict(bad)
    assert cold != "valid"
    assert _verdict(_pod("ml", "tpu.google.com/slice")) == "valid"
    assert _verdict(bad) == cold
