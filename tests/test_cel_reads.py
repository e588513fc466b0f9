"""Selectors evaluated once per distinct device content (`draplan.cel.reads`): the read set
the text shows, and answers identical to evaluating every device."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.quantity import Quantity
from draplan.cel import CelDevice, CelRuntimeError, SemverValue, clear_caches, compile_selector
from draplan.cel.reads import content_key, reads

DRIVER = "gpu.example.com"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("device.driver == 'gpu.example.com'", set()),
        ("device.allowMultipleAllocations", set()),
        (
            "device.driver == 'd' && device.attributes['d'].type == 'gpu'",
            {("attributes", "d", "type")},
        ),
        ('device.attributes["d"]["model"].startsWith("H100")', {("attributes", "d", "model")}),
        ("device.attributes.d.model == 'x'", {("attributes", "d", "model")}),
        (
            "device . capacity [ 'd' ] . memory.compareTo(quantity('1Gi')) >= 0",
            {("capacity", "d", "memory")},
        ),
        ("has(device.attributes['d'].model)", {("attributes", "d", "model")}),
        # Strings and comments that look like lookups are not lookups.
        ("'device.attributes' == 'x' // device.capacity", set()),
        ("mydevice.x == 1 || devices == 2", set()),
    ],
)
def test_read_sets(expression: str, expected: set[tuple[str, str, str]]) -> None:
    assert reads(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "device.attributes['d'].size() == 2",
        "'model' in device.attributes['d']",
        "device.attributes.exists(d, d == 'x')",
        "device.attributes['d'].exists(k, k == 'model')",
        "size(device.attributes) > 0",
        "device.attributes[device.driver].model == 'x'",
        "device.attributes['d'][?'model'].hasValue()",
        "device.attributes['d'].?model.hasValue()",
        "device.attributes[?'d'].hasValue()",
        "cel.bind(a, device.attributes['d'], a.model == 'x')",
        "[1].exists(device, device == 1)",
        "device.attributes['d']['mo' + 'del'] == 'x'",
        "device.attributes['d\\x2e'].model == 'x'",
        "device == {}",
    ],
)
def test_no_read_set_when_the_text_may_read_more(expression: str) -> None:
    assert reads(expression) is None


def test_content_key_tells_types_apart() -> None:
    read_set = frozenset({("attributes", DRIVER, "a")})
    one = _device({"a": 1})
    true = _device({"a": True})
    assert content_key(one, read_set) != content_key(true, read_set)
    assert content_key(one, read_set) == content_key(_device({"a": 1, "b": 2}), read_set)
    assert content_key(one, read_set) != content_key(_device({f"{DRIVER}/a": 2}), read_set)


def _device(
    attributes: dict[str, int | bool | str | SemverValue],
    capacity: dict[str, Quantity] | None = None,
    name: str = "gpu-0",
    driver: str = DRIVER,
) -> CelDevice:
    return CelDevice(
        key=(driver, "pool", name),
        driver=driver,
        attributes=attributes,
        capacity=capacity or {},
    )


EXPRESSIONS = [
    f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'",
    f"device.attributes['{DRIVER}'].model.startsWith('H1')",
    f"device.attributes['{DRIVER}'].index > 1",
    f"has(device.attributes['{DRIVER}'].model) && device.attributes['x.io'].zone == 'a'",
    f"device.capacity['{DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0",
    f"device.attributes['{DRIVER}'].version.isGreaterThan(semver('1.2.0'))",
    f"device.attributes['{DRIVER}'].size() > 2",
]
_VALUES = {
    "type": st.sampled_from(["gpu", "mig", 1]),
    "model": st.sampled_from(["H100", "H200", "A100"]),
    "index": st.integers(0, 3) | st.booleans(),
    "version": st.sampled_from([SemverValue.parse("1.2.3"), SemverValue.parse("1.1.0"), "1"]),
    "x.io/zone": st.sampled_from(["a", "b"]),
    "uuid": st.uuids().map(str),
}


@st.composite
def devices(draw: st.DrawFn) -> CelDevice:
    names = draw(st.sets(st.sampled_from(sorted(_VALUES))))
    attributes = {n: draw(_VALUES[n]) for n in sorted(names)}
    memory = draw(st.sampled_from([None, "40Gi", "80Gi"]))
    capacity = {"memory": Quantity.parse(memory)} if memory else {}
    driver = draw(st.sampled_from([DRIVER, "other.io"]))
    return _device(attributes, capacity, name=f"gpu-{draw(st.integers(0, 99))}", driver=driver)


def _answer(run: Callable[[], bool]) -> object:
    try:
        return run()
    except CelRuntimeError as err:
        return ("error", err.message)


@settings(max_examples=60, deadline=None)
@given(st.lists(devices(), min_size=1, max_size=12))
def test_shared_answers_equal_per_device_evaluation(batch: list[CelDevice]) -> None:
    clear_caches()
    for expression in EXPRESSIONS:
        selector = compile_selector(expression)
        for device in batch:
            cached = _answer(lambda: selector.matches(device))  # noqa: B023
            direct = _answer(lambda: selector.evaluate(device))  # noqa: B023
            assert cached == direct, (expression, device)
