"""The DRA CEL environment: Kubernetes selector semantics on cel-expr-python."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draplan.api.quantity import Quantity
from draplan.cel import (
    MAX_EXPRESSION_BYTES,
    CelCompileError,
    CelDevice,
    CelError,
    CelRuntimeError,
    SemverValue,
    clear_caches,
    compile_selector,
)
from draplan.cel.domains import optional_domains

DRIVER = "gpu.example.com"


def make_device(
    name: str = "gpu-0",
    driver: str = DRIVER,
    attributes: dict[str, int | bool | str | SemverValue] | None = None,
    capacity: dict[str, Quantity] | None = None,
    multi: bool = False,
) -> CelDevice:
    if attributes is None:
        attributes = {
            "model": "A100",
            "index": 3,
            "healthy": True,
            "driverVersion": SemverValue.parse("1.2.3"),
            "other.example.com/zone": "a",
            f"{DRIVER}/family": "ampere",
        }
    if capacity is None:
        capacity = {"memory": Quantity.parse("40Gi"), "other.example.com/slots": Quantity("4")}
    return CelDevice(
        key=(driver, "pool-a", name),
        driver=driver,
        attributes=attributes,
        capacity=capacity,
        allow_multiple_allocations=multi,
    )


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    clear_caches()


def evaluate(expression: str, device: CelDevice | None = None) -> bool:
    return compile_selector(expression).matches(device or make_device())


def runtime_error(expression: str, device: CelDevice | None = None) -> CelRuntimeError:
    with pytest.raises(CelRuntimeError) as info:
        evaluate(expression, device)
    return info.value


def compile_error(expression: str) -> CelCompileError:
    with pytest.raises(CelCompileError) as info:
        compile_selector(expression)
    return info.value


# -- the device variable -------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver == "gpu.example.com"',
        'device.attributes["gpu.example.com"].model == "A100"',
        'device.attributes["gpu.example.com"]["model"] == "A100"',
        'device.attributes["gpu.example.com"].index == 3',
        'device.attributes["gpu.example.com"].healthy',
        # A name qualified with the driver's own domain lands in the same map.
        'device.attributes["gpu.example.com"].family == "ampere"',
        'device.attributes["other.example.com"].zone == "a"',
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0',
        'device.capacity["other.example.com"].slots.asInteger() == 4',
        "device.attributes.size() == 2 && device.capacity.size() == 2",
        'device.attributes["gpu.example.com"].size() == 5',
        'has(device.attributes["gpu.example.com"].model)',
        '!has(device.attributes["gpu.example.com"].nothing)',
        '"model" in device.attributes["gpu.example.com"]',
        '!("zone" in device.attributes["gpu.example.com"])',
        'device.attributes.exists_one(d, d == "other.example.com")',
    ],
)
def test_domain_aliasing_and_lookups(expression: str) -> None:
    assert evaluate(expression) is True


def test_bare_names_use_the_device_driver_as_domain() -> None:
    device = make_device(driver="other.driver.io", attributes={"model": "X"}, capacity={})
    assert evaluate('device.attributes["other.driver.io"].model == "X"', device)
    assert evaluate('!("gpu.example.com" in device.attributes)', device)


@pytest.mark.parametrize(
    "expression",
    [
        '!("x.example.com" in device.attributes)',
        '!("x.example.com" in device.capacity)',
        'device.attributes["x.example.com"].size() == 0',
        '!device.attributes["x.example.com"].exists(k, true)',
        'device.attributes["x.example.com"].all(k, false)',
        '!has(device.attributes["x.example.com"].model)',
        'device.capacity["x.example.com"].size() == 0',
        'cel.bind(d, device.attributes["x.example.com"], !("model" in d))',
        # A domain that only has capacities reads as an empty attribute map, and vice versa.
        'device.attributes["gpu.example.com"].size() == 5 && device.capacity["q.io"].size() == 0',
    ],
)
def test_missing_domain_is_an_empty_map(expression: str) -> None:
    assert evaluate(expression) is True


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["x.example.com"].size() == 0 && !("x.example.com" in device.attributes)',
        '!("x.io" in device.capacity) && device.capacity["x.io"].size() == 0',
        'device.attributes["x.example.com"].size() == 0 && device.attributes.size() == 2',
        '[device.attributes["x.io"], device.attributes["y.io"]].all(m, m.size() == 0)'
        ' && !device.attributes.exists(d, d == "x.io")',
        'device.attributes.x.size() == 0 && !("x" in device.attributes)',
        # An optional lookup always finds the domain (upstream's map never reports it missing).
        'device.attributes[?"x.io"].hasValue()',
        'device.attributes[?"x.io"].orValue({"m": 1}).size() == 0',
        "device.attributes.?x.hasValue()",
    ],
)
def test_missing_domain_lookup_leaves_the_real_domains_alone(expression: str) -> None:
    # Upstream: the lookup gives an empty map while `in`, size() and iteration still see only
    # the device's real domains.
    assert evaluate(expression)


def test_missing_domain_through_an_alias_is_an_empty_map_too() -> None:
    # A lookup the text does not show directly (through cel.bind) still reads as empty.
    assert evaluate('cel.bind(a, device.attributes, a["x.example.com"].size() == 0)')


def test_driver_domain_may_be_missing_too() -> None:
    device = make_device(attributes={"other.io/x": 1}, capacity={})
    assert evaluate("device.attributes[device.driver].size() == 0", device)
    assert evaluate('device.attributes["other.io"].x == 1', device)


def test_missing_domain_with_capacity_only() -> None:
    device = make_device(attributes={"model": "A"}, capacity={"cap.io/slots": Quantity("2")})
    assert evaluate('device.attributes["cap.io"].size() == 0', device)
    assert evaluate('device.capacity["cap.io"].slots.isGreaterThan(quantity("1"))', device)


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["gpu.example.com"].noSuchAttr == "x"',
        'device.attributes["gpu.example.com"]["noSuchAttr"] == "x"',
        'device.capacity["gpu.example.com"].noSuchAttr.sign() == 1',
        'device.attributes["x.example.com"].noSuchAttr == "x"',
    ],
)
def test_missing_key_in_a_domain_is_a_runtime_error(expression: str) -> None:
    err = runtime_error(expression)
    assert "no such key: noSuchAttr" in err.message
    assert err.expression == expression


def test_allow_multiple_allocations() -> None:
    assert evaluate("device.allowMultipleAllocations", make_device("a", multi=True)) is True
    assert evaluate("device.allowMultipleAllocations", make_device("b", multi=False)) is False
    assert evaluate("!device.allowMultipleAllocations") is True


def test_attribute_value_types() -> None:
    assert evaluate('type(device.attributes["gpu.example.com"].index) == int')
    assert evaluate('type(device.attributes["gpu.example.com"].healthy) == bool')
    assert evaluate('type(device.attributes["gpu.example.com"].model) == string')
    assert evaluate('device.attributes["gpu.example.com"].driverVersion.major() == 1')


def test_unsupported_attribute_value_is_a_runtime_error() -> None:
    device = make_device(attributes={"ratio": 0.5})  # type: ignore[dict-item]
    assert "unsupported attribute value" in runtime_error("true", device).message
    huge = make_device(name="huge", attributes={"n": 2**63})
    assert "int64" in runtime_error("true", huge).message


def test_type_mismatch_is_a_runtime_error() -> None:
    err = runtime_error('device.attributes["gpu.example.com"].model > 3')
    assert "overload" in err.message.lower()


# -- result type and errors --------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    ["1 + 1", '"text"', 'quantity("1")', 'semver("1.0.0").major()', "[true]", "{}"],
)
def test_non_bool_static_type_is_a_compile_error(expression: str) -> None:
    assert "must evaluate to bool" in compile_error(expression).message


@pytest.mark.parametrize(
    "expression",
    ["device.driver", 'device.attributes["gpu.example.com"].index', "device.capacity"],
)
def test_non_bool_result_is_a_runtime_error(expression: str) -> None:
    assert "not bool" in runtime_error(expression).message


@pytest.mark.parametrize(
    "expression",
    [
        "device.driver ==",
        "device.driver == 'a' &&",
        "noSuchFunction(device)",
        "noSuchVariable == 1",
        'quantity(1) == quantity("1")',
        'semver("1.0.0").compareTo(quantity("1")) == 0',
        'quantity("1").compareTo(1) == 0',
    ],
)
def test_invalid_expression_is_a_compile_error(expression: str) -> None:
    err = compile_error(expression)
    assert isinstance(err, CelError)
    assert err.expression == expression
    assert "\n" not in str(err)
    assert str(err).startswith("CEL compile error: ")


def test_expression_length_is_capped() -> None:
    expression = "true || " * (MAX_EXPRESSION_BYTES // 8) + "true"
    assert "longer than" in compile_error(expression).message


def test_runtime_error_message_is_one_line() -> None:
    err = runtime_error('device.attributes["gpu.example.com"].nope')
    text = str(err)
    assert "\n" not in text
    assert text.startswith("CEL runtime error: device gpu.example.com/pool-a/gpu-0: ")


def test_errors_absorbed_by_logic_are_not_errors() -> None:
    assert evaluate('device.attributes["gpu.example.com"].nope == 1 || true')
    assert not evaluate('device.attributes["gpu.example.com"].nope == 1 && false')


def test_iteration_budget_is_a_runtime_error() -> None:
    big = "[" + ",".join("0" for _ in range(200)) + "]"
    err = runtime_error(f"{big}.all(a, {big}.all(b, a == b))")
    assert "budget" in err.message.lower()


# -- extensions ----------------------------------------------------------------------------


def test_cel_bind() -> None:
    assert evaluate(
        'cel.bind(dra, device.attributes["gpu.example.com"], dra.model == "A100" && dra.healthy)'
    )
    assert not evaluate('cel.bind(x, device.attributes["gpu.example.com"].index, x > 5)')


def test_strings_and_standard_macros() -> None:
    assert evaluate('device.attributes["gpu.example.com"].model.lowerAscii() == "a100"')
    assert evaluate('device.attributes["gpu.example.com"].model.matches("^A[0-9]+$")')
    assert evaluate('device.attributes["gpu.example.com"].model.startsWith("A")')
    assert evaluate('"a,b".split(",").size() == 2')
    assert evaluate(
        'device.attributes["gpu.example.com"].filter(k, k.startsWith("i")) == ["index"]'
    )


def test_optional_types() -> None:
    assert evaluate('device.attributes["gpu.example.com"][?"model"].hasValue()')
    assert evaluate('device.attributes["gpu.example.com"][?"nope"].orValue("x") == "x"')


# -- quantity ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        'quantity("200M").compareTo(quantity("0.2G")) == 0',
        'quantity("50M").compareTo(quantity("50Mi")) == -1',
        'quantity("50Mi").compareTo(quantity("50M")) == 1',
        'quantity("200M") == quantity("0.2G")',
        'quantity("1Gi") == quantity("1073741824")',
        'quantity("200M") != quantity("0.3G")',
        'isQuantity("20Mi") && isQuantity("1.3G") && isQuantity("10000k")',
        '!isQuantity("20Mo") && !isQuantity("10Mm") && !isQuantity("200K") && !isQuantity("1,3G")',
        'quantity("50M").isLessThan(quantity("50Mi"))',
        '!quantity("100M").isLessThan(quantity("50M"))',
        'quantity("150Mi").isGreaterThan(quantity("100Mi"))',
        '!quantity("50M").isGreaterThan(quantity("100M"))',
        'quantity("50k").add(quantity("20")) == quantity("50.02k")',
        'quantity("50k").add(20) == quantity("50020")',
        'quantity("50k").sub(quantity("20")) == quantity("49.98k")',
        'quantity("50k").sub(20000) == quantity("30k")',
        'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20',
        'quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980',
        'quantity("5").sign() == 1 && quantity("-5m").sign() == -1 && quantity("0").sign() == 0',
        'sign(quantity("-2")) == -1',
        'quantity("50").isInteger() && quantity("50k").isInteger()',
        '!quantity("1.5").isInteger()',
        '!quantity("9999999999999999999999999999999999999G").isInteger()',
        'quantity("50k").asInteger() == 50000',
        'quantity("50.703k").asApproximateFloat() == 50703.0',
        'quantity("50k").sub(20000).asApproximateFloat() == 30000.0',
        'quantity("1.5Gi").compareTo(quantity("1536Mi")) == 0',
    ],
)
def test_quantity_functions(expression: str) -> None:
    assert evaluate(expression) is True


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ('quantity("9999999999999999999999999999999999999G").asInteger() == 0', "cannot convert"),
        ('quantity("1.5").asInteger() == 1', "cannot convert"),
        ('quantity("10Mo") == quantity("1")', "regular expression"),
        ('quantity("10Mm") == quantity("1")', "suffix"),
    ],
)
def test_quantity_errors(expression: str, needle: str) -> None:
    assert needle in runtime_error(expression).message


def test_quantity_capacity_comparison() -> None:
    small = make_device("small", capacity={"memory": Quantity("16Gi")})
    selector = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
    assert evaluate(selector) is True
    assert evaluate(selector, small) is False


# -- semver --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2',
        'semver("1.2.3").patch() == 3',
        'semver("1.2.3").compareTo(semver("1.2.3")) == 0',
        'semver("1.2.3").compareTo(semver("2.0.0")) == -1',
        'semver("1.2.3").compareTo(semver("0.1.2")) == 1',
        'semver("1.0.0-alpha").isLessThan(semver("1.0.0"))',
        'semver("1.0.0-beta.11").isGreaterThan(semver("1.0.0-beta.2"))',
        '!semver("1.0.0").isGreaterThan(semver("1.0.0+build"))',
        'semver("1.0.0+a") == semver("1.0.0+b")',
        'semver("v1.0", true) == semver("1.0.0")',
        'semver("01.01.01", true).minor() == 1',
        'isSemver("1.0.0") && isSemver("0.1.0-alpha.1")',
        '!isSemver("v1.0") && !isSemver("1.0") && !isSemver("hello") && !isSemver("01.0.0")',
        'isSemver("v1.0", true) && isSemver("1", true) && !isSemver("1-rc", true)',
        '!isSemver("v1.0", false)',
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
        'device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.2.3")) == 0',
    ],
)
def test_semver_functions(expression: str) -> None:
    assert evaluate(expression) is True


@pytest.mark.parametrize(
    "expression",
    [
        'semver("v1.0") == semver("1.0.0")',
        'semver("1.0") == semver("1.0.0")',
        'semver("x").major() == 1',
    ],
)
def test_semver_parse_errors(expression: str) -> None:
    assert "semantic version" in runtime_error(expression).message


def test_semver_and_quantity_compare_dispatches_on_type() -> None:
    err = runtime_error(
        'device.attributes["gpu.example.com"].driverVersion'
        '.compareTo(device.capacity["gpu.example.com"].memory) == 0'
    )
    assert "no such overload" in err.message


def test_semver_value_parsing() -> None:
    version = SemverValue.parse("1.2.3-rc.1+build.5")
    assert (version.major, version.minor, version.patch) == (1, 2, 3)
    assert version.prerelease == ("rc", "1")
    assert version.build == ("build", "5")
    assert str(version) == "1.2.3-rc.1+build.5"
    assert str(SemverValue.parse("v01.2", normalize=True)) == "1.2.0"
    for bad in ["", "1", "1.2", "v1.2.3", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3.4"]:
        with pytest.raises(ValueError):
            SemverValue.parse(bad)


def test_semver_precedence() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.1.0",
        "2.0.0",
    ]
    versions = [SemverValue.parse(text) for text in ordered]
    for i, low in enumerate(versions):
        for high in versions[i + 1 :]:
            assert low.compare(high) == -1
            assert high.compare(low) == 1
        assert low.compare(low) == 0


_ident = st.from_regex(r"[1-9][0-9]{0,3}|0|[a-zA-Z-][0-9a-zA-Z-]{0,5}", fullmatch=True)


@given(
    st.tuples(*(st.integers(0, 10**6) for _ in range(3))),
    st.lists(_ident, max_size=3),
    st.lists(_ident, max_size=2),
)
def test_semver_round_trip(
    numbers: tuple[int, int, int], prerelease: list[str], build: list[str]
) -> None:
    text = ".".join(map(str, numbers))
    if prerelease:
        text += "-" + ".".join(prerelease)
    if build:
        text += "+" + ".".join(build)
    version = SemverValue.parse(text)
    assert str(version) == text
    assert version.compare(SemverValue.parse(text)) == 0
    assert SemverValue.parse(text, normalize=True) == version


# -- caches --------------------------------------------------------------------------------


def test_compiled_programs_are_cached() -> None:
    assert compile_selector("device.driver == 'a'") is compile_selector("device.driver == 'a'")
    first = compile_selector("true")
    clear_caches()
    assert compile_selector("true") is not first


def test_results_are_cached_per_expression_and_device_object() -> None:
    attributes: dict[str, int | bool | str | SemverValue] = {"model": "A100"}
    device = make_device(attributes=attributes)
    selector = compile_selector('device.attributes["gpu.example.com"].model == "A100"')
    assert selector.matches(device) is True
    # A device object is immutable in a snapshot: its cached answer wins until cleared.
    attributes["model"] = "H100"
    assert selector.matches(device) is True
    # A republished device (same driver/pool/name, new attributes) is a new object: no stale
    # answer leaks from the cache.
    assert selector.matches(make_device(attributes=attributes)) is False
    clear_caches()
    assert compile_selector(selector.expression).matches(device) is False


def test_runtime_errors_are_cached_too() -> None:
    selector = compile_selector('device.attributes["gpu.example.com"].nope == 1')
    device = make_device()
    with pytest.raises(CelRuntimeError) as first:
        selector.matches(device)
    with pytest.raises(CelRuntimeError) as second:
        selector.matches(device)
    assert first.value is second.value


def test_many_devices_give_consistent_answers() -> None:
    selector = compile_selector('device.attributes["gpu.example.com"].index % 2 == 0')
    devices = [make_device(f"gpu-{i}", attributes={"index": i}) for i in range(50)]
    first = [selector.matches(d) for d in devices]
    assert first == [i % 2 == 0 for i in range(50)]
    assert [selector.matches(d) for d in devices] == first


@pytest.mark.parametrize(
    ("expression", "rewritten"),
    [
        (
            'device.attributes["a.io"].x == 1',
            'device.attributes[?"a.io"].orValue(dyn({})).x == 1',
        ),
        (
            "device . capacity [ device.driver ].size() == 0",
            "device . capacity [?device.driver ].orValue(dyn({})).size() == 0",
        ),
        # Nested lookups, brackets inside the index, strings that look like lookups.
        (
            'device.attributes[["a.io", "]"][0]].x == "device.attributes[\\"b\\"]"',
            'device.attributes[?["a.io", "]"][0]].orValue(dyn({})).x'
            ' == "device.attributes[\\"b\\"]"',
        ),
        (
            'device.attributes[device.attributes["a.io"].name].x',
            'device.attributes[?device.attributes[?"a.io"].orValue(dyn({})).name]'
            ".orValue(dyn({})).x",
        ),
        (r'r"\" == device.attributes["a"]', r'r"\" == device.attributes[?"a"].orValue(dyn({}))'),
        # Comments are not code.
        (
            'device.attributes["a"].x == 1 // device.attributes["b"], isn\'t it\n|| false',
            'device.attributes[?"a"].orValue(dyn({})).x == 1'
            ' // device.attributes["b"], isn\'t it\n|| false',
        ),
        # Field syntax; optional lookups always find the domain upstream.
        ("device.attributes.x.y == 1", 'device.attributes[?"x"].orValue(dyn({})).y == 1'),
        (
            'device.attributes[?"a.io"].hasValue() && device.capacity.?x.hasValue()',
            'optional.of(device.attributes[?"a.io"].orValue(dyn({}))).hasValue()'
            ' && optional.of(device.capacity[?"x"].orValue(dyn({}))).hasValue()',
        ),
        # Methods of the map, has(), other variables, fields named device, a rebound device:
        # left alone.
        ("device.attributes.size() > 0", "device.attributes.size() > 0"),
        ("has(device.attributes.x)", "has(device.attributes.x)"),
        ("has(device.attributes.x.y)", 'has(device.attributes[?"x"].orValue(dyn({})).y)'),
        ('mydevice.attributes["a.io"]', 'mydevice.attributes["a.io"]'),
        ('x.device.attributes["a.io"]', 'x.device.attributes["a.io"]'),
        ('x . device.attributes["a.io"]', 'x . device.attributes["a.io"]'),
        ('x.?device.attributes["a.io"]', 'x.?device.attributes["a.io"]'),
        (
            'cel.bind(device, y, device.attributes["a.io"])',
            'cel.bind(device, y, device.attributes["a.io"])',
        ),
        # Unbalanced: unchanged, so the compiler reports the text as written.
        ('device.attributes["a.io"', 'device.attributes["a.io"'),
        ('device.attributes["a.io]', 'device.attributes["a.io]'),
    ],
)
def test_optional_domains_rewrites_direct_lookups_only(expression: str, rewritten: str) -> None:
    assert optional_domains(expression) == rewritten


def _expressions(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k == "expression" and isinstance(v, str)]
        return found + [e for v in node.values() for e in _expressions(v)]
    if isinstance(node, list):
        return [e for v in node for e in _expressions(v)]
    return []


def test_real_selectors_compile_rewritten() -> None:
    """Every selector of the conformance cases and the built-in examples that compiles as
    written compiles rewritten (a rewrite that does not would silently fall back to the
    retry)."""
    from pathlib import Path

    import yaml

    from draplan.cel.selector import _ENV

    tests = Path(__file__).resolve().parent
    paths = [
        *(tests.parents[1] / "shared" / "conformance").glob("*.yaml"),
        *(tests.parent / "src" / "draplan" / "examples").glob("*.yaml"),
    ]
    rewritten = []
    for path in sorted(paths):
        for doc in yaml.safe_load_all(path.read_text()):
            for expression in _expressions(doc):
                try:
                    _ENV.compile(expression)
                except RuntimeError:
                    continue  # a case about a bad selector
                if optional_domains(expression) != expression:
                    rewritten.append(expression)
                    _ENV.compile(optional_domains(expression))
    assert len(rewritten) >= 5
