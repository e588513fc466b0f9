"""Tests for draplan.api.quantity against k8s.io/apimachinery's resource.Quantity behaviour.

Expected strings come from upstream's quantity_test.go / quantity_golden_test.go tables or are
derived from its parse and canonicalisation rules; comments flag where upstream is surprising.
"""

from __future__ import annotations

import copy
import math
import pickle
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draplan.api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    ZERO,
    Quantity,
    parse_quantity,
)

P = Quantity.parse
INT64_MAX = 2**63 - 1

# (input, canonical String()).
PARSE_CASES = [
    # zero, in every spelling
    ("0", "0"),
    ("-0", "0"),
    ("00", "0"),
    ("0Ki", "0"),
    ("0n", "0"),
    ("0.000e-20", "0"),
    # plain integers and DecimalSI suffixes
    ("1", "1"),
    ("9", "9"),
    ("5n", "5n"),
    ("4u", "4u"),
    ("3m", "3m"),
    ("8k", "8k"),
    ("50k", "50k"),
    ("7M", "7M"),
    ("6G", "6G"),
    ("5T", "5T"),
    ("2P", "2P"),
    ("1E", "1E"),  # a bare E is exa, not an exponent
    ("12E", "12E"),
    ("100M", "100M"),
    ("1000M", "1G"),
    ("1000m", "1"),
    ("1025", "1025"),
    # BinarySI
    ("1Ki", "1Ki"),
    ("8Ki", "8Ki"),
    ("7Mi", "7Mi"),
    ("6Gi", "6Gi"),
    ("5Ti", "5Ti"),
    ("4Pi", "4Pi"),
    ("3Ei", "3Ei"),
    ("1023Ki", "1023Ki"),
    ("1024Mi", "1Gi"),
    ("1.5Gi", "1536Mi"),
    ("0.5Mi", "512Ki"),
    ("1.5Ki", "1536"),  # integer, but not a multiple of 1024: no suffix
    ("0.5Ki", "512"),  # below 1024 prints as DecimalSI
    (".001Ki", "1024m"),
    ("100.035Ki", "102435840m"),  # fractional binary values print as DecimalSI
    ("0.05Gi", "53687091200m"),
    # DecimalExponent keeps its form, exponent a multiple of 3
    ("1e3", "1e3"),
    ("1E6", "1e6"),
    ("12e6", "12e6"),
    ("1e2", "100"),
    ("1.2e3", "1200"),
    ("1.3E+6", "1300e3"),
    ("1E-3", "1e-3"),
    ("0.5e-1", "50e-3"),
    ("0.5e0", "500e-3"),
    ("1e100", "10e99"),
    # fractions and milli
    ("0.5", "500m"),
    ("1.5", "1500m"),
    ("0.1", "100m"),
    ("9.01", "9010m"),
    (".001", "1m"),
    (".0001k", "100m"),
    ("0.0005k", "500m"),
    ("1.", "1"),
    ("1.G", "1G"),
    ("8.1k", "8100"),
    ("100.035k", "100035"),
    ("10.035M", "10035k"),
    # upstream String() currently echoes these inputs verbatim (kubernetes#138165); we print
    # the canonical form its own CanonicalizeBytes produces.
    ("1.441", "1441m"),
    ("1.000001", "1000001u"),
    ("+1", "1"),
    ("007", "7"),
    # finer than 1n rounds away from zero
    ("3.001n", "4n"),
    ("1.1E-9", "2e-9"),
    ("0.0000000001", "1n"),
    ("0.0000000005", "1n"),
    ("0.9n", "1n"),
    ("-0.9n", "-1n"),
    ("0.00000012345", "124n"),
    ("0.00000012354", "124n"),
    ("0.5e-9", "1e-9"),
    ("1e-100", "1e-9"),
    (".000000000001Ki", "2n"),  # also switches BinarySI to DecimalSI
    ("-.484785E-7466", "-1e-9"),
    # negative values
    ("-1", "-1"),
    ("-1Ki", "-1Ki"),
    ("-1.5", "-1500m"),
    ("-100m", "-100m"),
    ("-9.5Gi", "-9728Mi"),
    ("-9.5000000001Gi", "-10200547328107374183n"),
    # huge values: decimal is unbounded, binary is capped at 2**63-1
    ("9223372036854775807", "9223372036854775807"),
    ("9223372036854775808", "9223372036854775808"),
    ("18446744073709551616", "18446744073709551616"),
    ("10000000000000000000", "10E"),
    ("9999999999999999999.1", "9999999999999999999100m"),
    ("1.0000000000000000001E", "1000000000000000000100m"),
    ("100E", "100E"),
    ("1000E", "1e21"),  # no SI suffix past E: exponent fallback (kubernetes#140459)
    ("8Ei", "9223372036854775807"),
    ("9Ei", "9223372036854775807"),
    ("9223372036854775807Ki", "9223372036854775807"),
    ("-20Ei", "-9223372036854775807"),
    # upstream's scanner lets every part of the number be empty: these are zero, not errors
    ("Ki", "0"),
    ("m", "0"),
    (".", "0"),
    ("-", "0"),
    ("+", "0"),
    # upstream narrows exponents with int32(): 2**32 wraps to 0
    ("1e4294967296", "1"),
]


@pytest.mark.parametrize(
    ("text", "expected"), PARSE_CASES, ids=[c[0] or "<empty>" for c in PARSE_CASES]
)
def test_parse_canonical_string(text: str, expected: str) -> None:
    q = P(text)
    assert str(q) == expected
    assert P(expected) == q  # the canonical form means the same value


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("1Ki", BINARY_SI),
        ("0Ki", BINARY_SI),
        ("1.5Gi", BINARY_SI),
        ("0.5Ki", BINARY_SI),  # 512 is still binary; it only prints as DecimalSI
        (".000000000001Ki", DECIMAL_SI),  # |x| < 1 stops being binary at parse time
        ("1k", DECIMAL_SI),
        ("1", DECIMAL_SI),
        ("1E", DECIMAL_SI),
        ("1E3", DECIMAL_EXPONENT),
        ("1e0", DECIMAL_EXPONENT),
        ("0.5e-9", DECIMAL_EXPONENT),
    ],
)
def test_parse_keeps_format(text: str, fmt: str) -> None:
    assert P(text).format == fmt


INVALID_CASES = [
    ("", ERR_FORMAT_WRONG),
    (" 1", ERR_FORMAT_WRONG),
    ("1 ", ERR_FORMAT_WRONG),
    ("1\n", ERR_FORMAT_WRONG),
    ("1.2.3", ERR_FORMAT_WRONG),
    ("1.1.M", ERR_FORMAT_WRONG),
    ("1+1.0M", ERR_FORMAT_WRONG),
    ("1Gb", ERR_FORMAT_WRONG),
    ("aoeu", ERR_FORMAT_WRONG),
    ("Non-Numeric", ERR_FORMAT_WRONG),
    ("1,5", ERR_FORMAT_WRONG),
    ("\u0661", ERR_FORMAT_WRONG),  # only ASCII digits
    ("--1", ERR_SUFFIX),
    ("1e", ERR_SUFFIX),
    ("1e+", ERR_SUFFIX),
    ("-3.01e-", ERR_SUFFIX),
    ("1i", ERR_SUFFIX),
    (".5i", ERR_SUFFIX),
    ("-3.01i", ERR_SUFFIX),
    ("0.1mi", ERR_SUFFIX),
    ("0.1am", ERR_FORMAT_WRONG),
    ("1ki", ERR_SUFFIX),
    ("1KiB", ERR_FORMAT_WRONG),
    ("1k1", ERR_SUFFIX),
    ("1e9223372036854775808", ERR_SUFFIX),  # exponent outside int64
    # no digits and upstream's slow path (below 1n, or Pi/Ei) cannot read an empty number
    ("e-10", ERR_NUMERIC),
    ("Pi", ERR_NUMERIC),
    ("-Ei", ERR_NUMERIC),
]


@pytest.mark.parametrize(
    ("text", "message"), INVALID_CASES, ids=[repr(c[0]) for c in INVALID_CASES]
)
def test_parse_invalid(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        P(text)
    assert str(err.value) == message


def test_error_message_quotes_upstream_regex() -> None:
    with pytest.raises(ValueError, match="quantities must match the regular expression"):
        P("1Gb")
    assert "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" in ERR_FORMAT_WRONG


def test_parse_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        P(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        P(True)


def test_parse_int_and_constructors() -> None:
    assert str(P(1024)) == "1024"
    assert str(P(1000)) == "1k"
    assert P(1024).format == DECIMAL_SI
    assert str(P(-5)) == "-5"
    assert parse_quantity("1Gi") == P("1Gi")
    assert Quantity("1Gi") == Quantity("1073741824") == Quantity(1073741824)
    assert P("0") == ZERO
    assert str(ZERO) == "0"
    assert ZERO.format == DECIMAL_SI


@pytest.mark.parametrize(
    ("milli", "expected"),
    [(1, "1m"), (1000, "1"), (1234000, "1234"), (-5, "-5m"), (0, "0"), (1500, "1500m")],
)
def test_from_milli(milli: int, expected: str) -> None:
    q = Quantity.from_milli(milli)
    assert str(q) == expected
    assert q.format == DECIMAL_SI
    assert q.milli_value() == milli


@pytest.mark.parametrize(
    ("n", "fmt", "expected"),
    [
        (1, DECIMAL_SI, "1"),
        (1000, DECIMAL_SI, "1k"),
        (1234000, DECIMAL_SI, "1234k"),
        (1024, BINARY_SI, "1Ki"),
        (1024 * 1024, BINARY_SI, "1Mi"),
        (5, BINARY_SI, "5"),
        (1000000, DECIMAL_EXPONENT, "1e6"),
        (2**70, BINARY_SI, "1024Ei"),  # upstream has no suffix past Ei (it would print "1")
    ],
)
def test_from_int(n: int, fmt: str, expected: str) -> None:
    q = Quantity.from_int(n, fmt)
    assert str(q) == expected
    assert q.format == fmt
    assert q.value() == n


def test_from_int_rejects_unknown_format() -> None:
    with pytest.raises(ValueError):
        Quantity.from_int(1, "Binary")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("200M", "0.2G", 0),
        ("1Ki", "1024", 0),
        ("1000m", "1", 0),
        ("1Gi", "1073741824", 0),
        ("1.5Gi", "1536Mi", 0),
        ("1e3", "1k", 0),
        ("0", "0Ki", 0),
        ("100m", "50m", 1),
        ("50m", "100m", -1),
        ("10000T", "100Gi", 1),
        ("1Gi", "1G", 1),
        ("-1", "0", -1),
        ("1n", "0", 1),
        ("-1Ki", "-1000", -1),
        ("12E", "9223372036854775807", 1),
        ("1e2147483647", "999999999999999999999999E", 1),  # no 10**huge is ever built
        ("-1e2147483647", "-1E", -1),
        ("1n", "1e-2147483647", 0),  # both round up to 1n
    ],
)
def test_compare(a: str, b: str, expected: int) -> None:
    qa, qb = P(a), P(b)
    assert qa.compare(qb) == expected
    assert qb.compare(qa) == -expected
    assert (qa == qb) is (expected == 0)
    assert (qa < qb) is (expected < 0)
    assert (qa <= qb) is (expected <= 0)
    assert (qa > qb) is (expected > 0)
    assert (qa >= qb) is (expected >= 0)


def test_hash_by_value() -> None:
    assert Quantity("1Gi") == Quantity("1073741824")
    assert hash(Quantity("1Gi")) == hash(Quantity("1073741824"))
    assert len({P("1Gi"), P("1073741824"), P("1024Mi"), P("1.073741824G")}) == 1
    assert len({P("0"), P("0Ki"), P("-0"), ZERO}) == 1
    assert {P("200M"): "x"}[P("0.2G")] == "x"


def test_equality_with_other_types() -> None:
    assert P("1") != 1
    assert P("1") != "1"
    with pytest.raises(TypeError):
        _ = P("1") < 1  # type: ignore[operator]


def test_ordering() -> None:
    items = [P(s) for s in ["1Gi", "-1", "500m", "1G", "0", "1Ki", "1e3", "1n"]]
    assert [str(q) for q in sorted(items)] == ["-1", "0", "1n", "500m", "1e3", "1Ki", "1G", "1Gi"]
    assert max(items) == P("1Gi")
    assert min(items) == P("-1")


@pytest.mark.parametrize(
    ("a", "b", "total", "fmt"),
    [
        ("1Gi", "512Mi", "1536Mi", BINARY_SI),
        ("1Gi", "1024", "1048577Ki", BINARY_SI),  # left operand's format wins
        ("1024", "1Gi", "1073742848", DECIMAL_SI),
        ("1e3", "1k", "2e3", DECIMAL_EXPONENT),
        ("100m", "0", "100m", DECIMAL_SI),
        ("0", "1Gi", "1Gi", BINARY_SI),  # like Go's Add, a zero receiver takes y's format
        ("0Ki", "1e3", "1e3", DECIMAL_EXPONENT),
        ("1.5", "-1500m", "0", DECIMAL_SI),
        ("1n", "1E", "1000000000000000000000000001n", DECIMAL_SI),
    ],
)
def test_add(a: str, b: str, total: str, fmt: str) -> None:
    result = P(a) + P(b)
    assert str(result) == total
    assert result.format == fmt
    assert result.as_fraction() == P(a).as_fraction() + P(b).as_fraction()


@pytest.mark.parametrize(
    ("a", "b", "difference", "fmt"),
    [
        ("2Gi", "1Gi", "1Gi", BINARY_SI),
        ("10", "1Ki", "-1014", DECIMAL_SI),
        ("1Gi", "1G", "73741824", BINARY_SI),  # not a multiple of 1024: prints plain
        ("0", "1Gi", "-1Gi", BINARY_SI),  # zero receiver takes y's format (Go's Sub)
        ("1", "1", "0", DECIMAL_SI),
        ("1", "1n", "999999999n", DECIMAL_SI),
    ],
)
def test_sub(a: str, b: str, difference: str, fmt: str) -> None:
    result = P(a) - P(b)
    assert str(result) == difference
    assert result.format == fmt


def test_neg_keeps_format() -> None:
    q = -P("1.5Gi")
    assert str(q) == "-1536Mi"
    assert q.format == BINARY_SI
    assert -q == P("1.5Gi")
    assert q.__neg__().__neg__() == q
    assert str(-ZERO) == "0"


def test_arithmetic_with_other_types_is_unsupported() -> None:
    with pytest.raises(TypeError):
        _ = P("1") + 1  # type: ignore[operator]


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1", 1, 1000),
        ("0", 0, 0),
        ("1.5", 2, 1500),
        ("-1.5", -2, -1500),  # away from zero, not ceil
        ("100m", 1, 100),
        ("-100m", -1, -100),
        ("1n", 1, 1),
        ("-1n", -1, -1),
        ("1.0001", 2, 1001),
        ("1.5m", 1, 2),
        ("-1.5m", -1, -2),
        ("1Ki", 1024, 1024000),
        ("1Gi", 1073741824, 1073741824000),
        ("-.484785E-7466", -1, -1),  # kubernetes#138510 fixed this to round away from zero
        ("1e20", 10**20, 10**23),  # exact; Go's int64 would overflow silently
    ],
)
def test_value_and_milli_value(text: str, value: int, milli: int) -> None:
    q = P(text)
    assert q.value() == value
    assert q.milli_value() == milli
    assert q.milli_value() == milli  # kept on the (immutable, shared) Quantity
    assert (-q).milli_value() == -milli
    assert pickle.loads(pickle.dumps(q)).milli_value() == milli


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9223372036854775807", INT64_MAX),
        ("-9223372036854775808", -(2**63)),
        ("1E", 10**18),
        ("8Ei", INT64_MAX),  # capped at parse
        ("1Ki", 1024),
        ("0", 0),
    ],
)
def test_as_int64(text: str, expected: int) -> None:
    assert P(text).as_int64() == expected


@pytest.mark.parametrize(
    "text", ["9223372036854775808", "-9223372036854775809", "1e20", "10E", "1.5", "1n", "1e99"]
)
def test_as_int64_overflow(text: str) -> None:
    with pytest.raises(OverflowError):
        P(text).as_int64()


def test_exact_and_approximate_values() -> None:
    assert P("1.5Gi").as_fraction() == Fraction(1610612736)
    assert P("100m").as_fraction() == Fraction(1, 10)
    assert P("-9.01").as_fraction() == Fraction(-901, 100)
    assert P("1.1Ki").as_float() == 1126.4
    assert P("2Gi").as_float() == 2.147483648e09
    assert P("12E").as_float() == 1.2e19
    assert P("12e500").as_float() == math.inf
    assert P("-12e500").as_float() == -math.inf
    assert P("1e2147483647").as_float() == math.inf
    assert P("0").as_float() == 0.0


@pytest.mark.parametrize(
    ("text", "integer", "sign"),
    [("1", True, 1), ("1.5", False, 1), ("1k", True, 1), ("1n", False, 1), ("0", True, 0),
     ("-1Ki", True, -1), ("-100m", False, -1)],
)  # fmt: skip
def test_is_integer_and_sign(text: str, integer: bool, sign: int) -> None:
    q = P(text)
    assert q.is_integer() is integer
    assert q.sign() == sign


def test_repr() -> None:
    assert repr(P("1.5Gi")) == "Quantity('1536Mi')"
    assert repr(ZERO) == "Quantity('0')"


def test_immutable_and_copyable() -> None:
    q = P("1.5Gi")
    with pytest.raises(AttributeError):
        q._m = 5
    with pytest.raises(AttributeError):
        del q._e
    assert copy.copy(q) is q
    assert copy.deepcopy(q) is q
    for original in [q, P("0.5Ki"), P("1e3"), P("-3.001n"), P("1e2147483647")]:
        restored = pickle.loads(pickle.dumps(original))
        assert restored == original
        assert restored.format == original.format
        assert str(restored) == str(original)


# -- properties -------------------------------------------------------------------------------

_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


@st.composite
def quantity_texts(draw: st.DrawFn) -> str:
    """Well-formed quantity text with at least one digit."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text("0123456789", min_size=1, max_size=22))
    frac = draw(st.one_of(st.just(None), st.text("0123456789", max_size=14)))
    suffix = draw(
        st.one_of(
            st.sampled_from(_SUFFIXES),
            st.builds(lambda e, n: f"{e}{n:+d}", st.sampled_from("eE"), st.integers(-30, 30)),
        )
    )
    return sign + whole + ("" if frac is None else "." + frac) + suffix


def _oracle(text: str) -> Fraction:
    """The value upstream assigns to ``text``, computed independently with Fractions."""
    body = text.lstrip("+-")
    negative = text.startswith("-")
    i = 0
    while i < len(body) and (body[i].isdigit() or body[i] == "."):
        i += 1
    number, suffix = body[:i], body[i:]
    value = Fraction(number if number[0] != "." else "0" + number)
    binary = suffix.endswith("i")
    if binary:
        value *= 2 ** (10 * ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].index(suffix) + 10)
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        value *= Fraction(10) ** int(suffix[1:])
    else:
        value *= Fraction(10) ** dict(n=-9, u=-6, m=-3, k=3, M=6, G=9, T=12, P=15, E=18).get(
            suffix, 0
        )
    nanos = value * 10**9
    value = Fraction(math.ceil(nanos), 10**9)  # round magnitude up to 1n
    if binary:
        value = min(value, Fraction(INT64_MAX))
    return -value if negative else value


@given(quantity_texts())
def test_parse_matches_exact_oracle(text: str) -> None:
    assert P(text).as_fraction() == _oracle(text)


@given(quantity_texts())
def test_string_round_trips(text: str) -> None:
    q = P(text)
    printed = str(q)
    again = P(printed)
    assert again == q  # parse(str(q)) == q
    assert str(again) == printed  # canonical form is a fixed point


@given(quantity_texts(), quantity_texts())
def test_arithmetic_and_order_match_fractions(a: str, b: str) -> None:
    qa, qb = P(a), P(b)
    fa, fb = qa.as_fraction(), qb.as_fraction()
    assert (qa + qb).as_fraction() == fa + fb
    assert (qa - qb).as_fraction() == fa - fb
    assert qa.compare(qb) == (fa > fb) - (fa < fb)
    assert (qa == qb) is (fa == fb)
    assert (hash(qa) == hash(qb)) or fa != fb
