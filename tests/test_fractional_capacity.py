"""DRAFractionalCapacityRange (KEP-5075; beta, on in 1.37; absent in 1.36): a validRange whose
min, max or step is fractional rounds requests in milli units; otherwise, and always without
the gate, upstream rounds request, min and step up to whole units first (Quantity.Value())."""

from __future__ import annotations

import pytest

from draplan.allocator.capacity import consumed_amount
from draplan.api.features import FeatureGates, defaults
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import CapacityRequestPolicy, CapacityRequestPolicyRange
from draplan.cluster.devices import nanos
from draplan.cluster.state import ClusterState
from test_allocator import claim, code, device_class, nic, node, request, results, run


def policy(
    minimum: str, step: str, default: str, maximum: str | None = None
) -> CapacityRequestPolicy:
    q = Quantity.parse
    rng = CapacityRequestPolicyRange(
        min=q(minimum), step=q(step), max=q(maximum) if maximum else None
    )
    return CapacityRequestPolicy(default=q(default), valid_range=rng)


@pytest.mark.parametrize(
    ("minimum", "step", "asked", "on", "off"),
    [
        # Fractional range: min + k·step in milli units with the gate; whole units without it
        # (500m and 250m round up to 1, the request 600m to 1).
        ("500m", "250m", "600m", 750, 1000),
        ("500m", "250m", "1001m", 1250, 1000 + 1000),
        ("1500m", "1", "2001m", 2500, 3000),
        # A whole range rounds alike either way, whatever the request's fraction.
        ("1", "2", "1500m", 3000, 3000),
        ("2", "1", "2", 2000, 2000),
    ],
)
def test_rounding_unit(minimum: str, step: str, asked: str, on: int, off: int) -> None:
    pol = policy(minimum, step, minimum)
    for fractional, want in ((True, on), (False, off)):
        got = consumed_amount(
            nanos(Quantity.parse(asked)), nanos(Quantity.parse("10")), pol, fractional
        )
        assert got == want * 10**6, (fractional, got)


def state(features: FeatureGates, **spec: str) -> ClusterState:
    return ClusterState.from_objects([node(), device_class(), nic(**spec)], features)


@pytest.mark.parametrize(("version", "written"), [("1.37", "750m"), ("1.36", "1")])
def test_the_claim_records_what_the_release_consumes(version: str, written: str) -> None:
    st = state(defaults(version), default="500m", minimum="500m", step="250m", maximum="8")
    (res,) = results(run(st, claim("c", request("r", 1, cap={"bandwidth": "600m"}))))
    assert str(res.consumed_capacity["bandwidth"]) == written


def test_max_is_checked_after_rounding() -> None:
    # 1100m rounds to 1250m with milli arithmetic, above max 1200m; 1.36 rounds to 2.
    spec = {"default": "500m", "minimum": "500m", "step": "250m", "maximum": "1200m"}
    assert code(
        run(
            state(defaults("1.37"), **spec), claim("c", request("r", 1, cap={"bandwidth": "1100m"}))
        )
    )
    assert code(
        run(
            state(defaults("1.36"), **spec), claim("c", request("r", 1, cap={"bandwidth": "1100m"}))
        )
    )
    (res,) = results(
        run(state(defaults("1.37"), **spec), claim("c", request("r", 1, cap={"bandwidth": "900m"})))
    )
    assert str(res.consumed_capacity["bandwidth"]) == "1"
