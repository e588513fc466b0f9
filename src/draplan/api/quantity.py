"""Kubernetes ``resource.Quantity``: parsed, compared, added and printed like k8s.io/apimachinery.

A quantity is stored exactly as ``mantissa * 10**exponent`` with the mantissa stripped of
trailing zeros, so equal values have equal fields: equality, hashing and ordering are exact and
cheap, whatever suffix the text used. The format of the parsed text (BinarySI, DecimalSI or
DecimalExponent) is kept only to choose how the value prints.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Final, NoReturn, final

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "ERR_FORMAT_WRONG",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "ZERO",
    "Quantity",
    "parse_quantity",
]

BINARY_SI: Final = "BinarySI"
DECIMAL_SI: Final = "DecimalSI"
DECIMAL_EXPONENT: Final = "DecimalExponent"
_FORMATS: Final = {BINARY_SI: BINARY_SI, DECIMAL_SI: DECIMAL_SI, DECIMAL_EXPONENT: DECIMAL_EXPONENT}

# Upstream's three parse errors, word for word, so messages match the API server and CEL.
SPLIT_RE_STRING: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{SPLIT_RE_STRING}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"

_MAX_INT64: Final = (1 << 63) - 1
_MIN_INT64: Final = -(1 << 63)
_NANO: Final = -9  # parsing keeps nothing finer than 1n

# The language upstream's hand-written scanner (parseQuantityString) accepts. It is looser than
# the regex quoted in its error: every part of the number may be empty, so "Ki", "." and "-"
# scan (and parse as zero), and the suffix is letters, then an optional sign, then digits.
_SCAN: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT: Final = re.compile(r"[+-]?[0-9]+")

_DECIMAL_SUFFIXES: Final = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}  # fmt: skip
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX_FOR: Final = {exp: text for text, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_FOR: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


@final
class Quantity:
    """An exact fixed-point quantity; immutable, hashable and totally ordered by value."""

    __slots__ = ("_e", "_fmt", "_m", "_milli", "_s")

    _m: int  # mantissa, never divisible by 10 (0 for zero)
    _e: int  # base-10 exponent (0 for zero)
    _fmt: str  # format to print in
    _s: str | None  # cached canonical string
    _milli: int | None  # cached milli_value (one parsed Quantity serves a whole dump)

    def __init__(self, value: str | int) -> None:
        """Parse ``value`` like :meth:`parse` (``Quantity("1Gi")``)."""
        src = Quantity.parse(value)
        _set(self, src._m, src._e, src._fmt)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str | int) -> Quantity:
        """Parse Kubernetes quantity text; an int is a plain DecimalSI count. ValueError if bad."""
        if isinstance(text, str):
            return _parse_text(text)
        if isinstance(text, int) and not isinstance(text, bool):
            return _new(text, 0, DECIMAL_SI)
        raise TypeError(f"a quantity is parsed from str or int, not {type(text).__name__}")

    @classmethod
    def from_milli(cls, milli: int) -> Quantity:
        """``milli`` thousandths, DecimalSI (Go ``NewMilliQuantity(milli, DecimalSI)``)."""
        return _new(_check_int(milli), -3, DECIMAL_SI)

    @classmethod
    def from_int(cls, n: int, fmt: str = DECIMAL_SI) -> Quantity:
        """The integer ``n`` printed in ``fmt`` (Go ``NewQuantity``)."""
        if fmt not in _FORMATS:
            raise ValueError(f"unknown quantity format {fmt!r}")
        return _new(_check_int(n), 0, _FORMATS[fmt])

    # -- printing -------------------------------------------------------------------------

    def __str__(self) -> str:
        s = self._s
        if s is None:
            s = _canonical(self._m, self._e, self._fmt)
            object.__setattr__(self, "_s", s)
        return s

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    @property
    def format(self) -> str:
        """``"BinarySI"``, ``"DecimalSI"`` or ``"DecimalExponent"``."""
        return self._fmt

    # -- arithmetic -----------------------------------------------------------------------

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        # Go's Add keeps the receiver's format, except that a zero receiver takes y's.
        fmt = self._fmt if self._m else other._fmt
        return _new(*_add(self._m, self._e, other._m, other._e), fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = self._fmt if self._m else other._fmt  # same rule as Go's Sub
        return _new(*_add(self._m, self._e, -other._m, other._e), fmt)

    def __neg__(self) -> Quantity:
        return _new(-self._m, self._e, self._fmt)

    # -- comparison -----------------------------------------------------------------------

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1 as ``self`` is less than, equal to or greater than ``other``."""
        return _cmp(self._m, self._e, other._m, other._e)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._m == other._m and self._e == other._e

    def __hash__(self) -> int:
        return hash((self._m, self._e))

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return _cmp(self._m, self._e, other._m, other._e) < 0

    def __le__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return _cmp(self._m, self._e, other._m, other._e) <= 0

    def __gt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return _cmp(self._m, self._e, other._m, other._e) > 0

    def __ge__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return _cmp(self._m, self._e, other._m, other._e) >= 0

    # -- accessors ------------------------------------------------------------------------

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self._m > 0) - (self._m < 0)

    def is_integer(self) -> bool:
        """True if the value has no fractional part."""
        return self._e >= 0  # the mantissa has no trailing zeros, so e < 0 means a fraction

    def value(self) -> int:
        """The value rounded away from zero to an integer (Go ``Value``, without its overflow)."""
        return _scaled_away_from_zero(self._m, self._e)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero (Go ``MilliValue``)."""
        milli = self._milli
        if milli is None:
            milli = _scaled_away_from_zero(self._m, self._e + 3)
            object.__setattr__(self, "_milli", milli)
        return milli

    def as_fraction(self) -> Fraction:
        """The exact value."""
        if self._e >= 0:
            return Fraction(self._m * 10**self._e)
        return Fraction(self._m, 10**-self._e)

    def as_float(self) -> float:
        """The nearest float; ±inf beyond float range (like Go ``AsApproximateFloat64``)."""
        m, e = self._m, self._e
        try:
            if e >= 0:
                if e > 308:  # |m| >= 1, so this is past float range: skip building 10**e
                    raise OverflowError
                return float(m * 10**e)
            return m / _pow10(-e)
        except OverflowError:
            return math.copysign(math.inf, m)

    def as_int64(self) -> int:
        """The exact value as an int64; OverflowError if fractional or out of int64 range."""
        m, e = self._m, self._e
        if e < 0:
            raise OverflowError(f"quantity {self} is not an integer")
        if e > 18:  # |m| >= 1, so |value| >= 10**19 > 2**63
            raise OverflowError(f"quantity {self} does not fit in int64")
        n = m * _pow10(e)
        if not _MIN_INT64 <= n <= _MAX_INT64:
            raise OverflowError(f"quantity {self} does not fit in int64")
        return n

    # -- immutability and copying -----------------------------------------------------------

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"Quantity is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"Quantity is immutable (cannot delete {name!r})")

    def __reduce__(self) -> tuple[object, tuple[int, int, str]]:
        # The default slot-state pickling would go through the blocked __setattr__.
        return _restore, (self._m, self._e, self._fmt)

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: object) -> Quantity:
        return self


def parse_quantity(text: str | int) -> Quantity:
    """Alias of :meth:`Quantity.parse`."""
    return Quantity.parse(text)


# -- internals ------------------------------------------------------------------------------


def _pow10(k: int) -> int:
    # typeshed types int ** int as Any (a negative power is a float); k is never negative here.
    power: int = 10**k
    return power


def _set(q: Quantity, m: int, e: int, fmt: str) -> None:
    setattr_ = object.__setattr__
    setattr_(q, "_m", m)
    setattr_(q, "_e", e)
    setattr_(q, "_fmt", fmt)
    setattr_(q, "_s", None)
    setattr_(q, "_milli", None)


def _new(m: int, e: int, fmt: str) -> Quantity:
    """A Quantity for ``m * 10**e``, normalising the mantissa."""
    if m == 0:
        e = 0
    elif m % 10 == 0:
        while m % 1000 == 0:
            m //= 1000
            e += 3
        while m % 10 == 0:
            m //= 10
            e += 1
    q: Quantity = object.__new__(Quantity)
    _set(q, m, e, fmt)
    return q


def _restore(m: int, e: int, fmt: str) -> Quantity:
    return _new(m, e, _FORMATS[fmt])


def _check_int(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"expected an int, got {type(n).__name__}")
    return n


def _interpret_suffix(suffix: str) -> tuple[int, int, str] | None:
    """(base, exponent, format) for a suffix, or None (upstream ``suffixHandler.interpret``)."""
    exp = _DECIMAL_SUFFIXES.get(suffix)
    if exp is not None:
        return 10, exp, DECIMAL_SI
    exp = _BINARY_SUFFIXES.get(suffix)
    if exp is not None:
        return 2, exp, BINARY_SI
    # "e"/"E" plus an int64 (strconv.ParseInt), so "1E" is exa but "1E3" is an exponent.
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix, 1):
        if len(suffix[1:].lstrip("+-").lstrip("0")) > 19:
            return None  # outside int64 for sure; also keeps int() away from huge strings
        parsed = int(suffix[1:])
        if not _MIN_INT64 <= parsed <= _MAX_INT64:
            return None
        # Upstream narrows the int64 with int32(parsed), which wraps: "1e4294967296" is 1.
        return 10, ((parsed + (1 << 31)) & 0xFFFFFFFF) - (1 << 31), DECIMAL_EXPONENT
    return None


@functools.lru_cache(maxsize=16384)
def _parse_text(text: str) -> Quantity:
    """Upstream ``ParseQuantity``, cached: device capacities repeat a handful of strings."""
    if text == "0":
        return ZERO
    # The empty string needs its own check: every part of _SCAN may be empty.
    match = _SCAN.fullmatch(text) if text else None
    if match is None:
        raise ValueError(ERR_FORMAT_WRONG)
    sign, whole, frac, suffix = match.groups("")
    interpreted = _interpret_suffix(suffix)
    if interpreted is None:
        raise ValueError(ERR_SUFFIX)
    base, exp, fmt = interpreted

    if not whole and not frac:
        # No digit at all. Upstream's int64 fast path reads that as 0, but its inf.Dec slow
        # path cannot parse an empty number: the slow path is taken below 1n ("e-10") and for
        # Pi/Ei, whose precision estimate is negative even for one digit.
        if (exp < _NANO) if base == 10 else (exp > 40):
            raise ValueError(ERR_NUMERIC)
        return _new(0, 0, fmt)

    # Zeros that cannot change the value are dropped so int() never sees them (CPython refuses
    # to convert strings of more than ~4300 digits).
    frac = frac.rstrip("0")
    digits = (whole + frac).lstrip("0")
    if not digits:
        return _new(0, 0, fmt)
    try:
        mantissa = int(digits)
    except ValueError:
        raise ValueError(ERR_NUMERIC) from None
    if sign == "-":
        mantissa = -mantissa
    if base == 10:
        m, e = mantissa, exp - len(frac)
    else:
        m, e = mantissa << exp, -len(frac)

    # Upstream rounds anything finer than 1n away from zero ("0.9n" -> "1n") so that asking
    # for a tiny amount never yields zero.
    m, e = _round_away_from_zero(m, e, _NANO)

    if fmt == BINARY_SI:
        # Upstream caps a binary quantity's magnitude at 2**63-1 ("8Ei" parses as 2**63-1) ...
        if abs(m) > _MAX_INT64 * 10**-e:  # e is in [-9, 0] here
            m, e = (_MAX_INT64 if m > 0 else -_MAX_INT64), 0
        # ... and stops calling a value strictly between -1 and 1 binary.
        elif e < 0 and abs(m) < 10**-e:
            fmt = DECIMAL_SI
    return _new(m, e, fmt)


def _round_away_from_zero(m: int, e: int, target: int) -> tuple[int, int]:
    """``m * 10**e`` rounded away from zero to a multiple of ``10**target``."""
    if e >= target or m == 0:
        return m, e
    shift = target - e
    a = -m if m < 0 else m
    if shift >= a.bit_length():
        q = 1  # 10**shift > 2**bit_length > a: below one unit; also avoids a huge 10**shift
    else:
        q, r = divmod(a, 10**shift)
        if r:
            q += 1
    return (q if m > 0 else -q), target


def _scaled_away_from_zero(m: int, e: int) -> int:
    """``m * 10**e`` rounded away from zero to an integer.

    Upstream ``ScaledValue`` documents rounding away from zero; negatives actually did so only
    after kubernetes#138510, and int64 overflow is silent there. This returns the exact int.
    """
    if e >= 0:
        return m * _pow10(e)
    return _round_away_from_zero(m, e, 0)[0]


def _cmp(m1: int, e1: int, m2: int, e2: int) -> int:
    if e1 == e2:
        return (m1 > m2) - (m1 < m2)
    s1, s2 = (m1 > 0) - (m1 < 0), (m2 > 0) - (m2 < 0)
    if s1 != s2 or s1 == 0:
        return (s1 > s2) - (s1 < s2)
    # Same non-zero sign: compare magnitudes without building 10**d when d is absurd
    # ("1e2147483647" parses), since |m| >= 1 and 10**d > 2**bit_length(m) when d >= bit_length.
    a1, a2 = abs(m1), abs(m2)
    if e1 > e2:
        d = e1 - e2
        bigger = 1 if d >= a2.bit_length() else (a1 * 10**d > a2) - (a1 * 10**d < a2)
    else:
        d = e2 - e1
        bigger = -1 if d >= a1.bit_length() else (a1 > a2 * 10**d) - (a1 < a2 * 10**d)
    return bigger * s1


def _add(m1: int, e1: int, m2: int, e2: int) -> tuple[int, int]:
    if m2 == 0:
        return m1, e1
    if m1 == 0:
        return m2, e2
    if e1 == e2:
        return m1 + m2, e1
    if e1 > e2:
        return m1 * 10 ** (e1 - e2) + m2, e2
    return m1 + m2 * 10 ** (e2 - e1), e1


def _canonical(m: int, e: int, fmt: str) -> str:
    """Upstream ``CanonicalizeBytes``: no fractional digits, the largest exponent that's exact."""
    if m == 0:
        return "0"
    if fmt == BINARY_SI:
        # Binary only for integers of magnitude >= 1024; anything else would need rounding or
        # look odd, so upstream prints it as DecimalSI ("0.5Ki" -> "512", "1.1Ki" -> "1126400m").
        if e >= 0:
            n = m * 10**e
            a = -n if n < 0 else n
            if a >= 1024:
                trailing_zero_bits = (a & -a).bit_length() - 1
                # Upstream has no suffix past Ei and would drop the exponent (2**70 -> "1");
                # stopping at Ei keeps the value ("1024Ei").
                k = min(trailing_zero_bits // 10, 6)
                return f"{'-' if n < 0 else ''}{a >> (10 * k)}{_BINARY_SUFFIX_FOR[k]}"
        fmt = DECIMAL_SI
    # Decimal forms use exponents that are multiples of 3: "0.5" -> "500m", "1e2" -> "100".
    r = e % 3
    if r:
        m *= 10**r
        e -= r
    if fmt == DECIMAL_SI:
        suffix = _DECIMAL_SUFFIX_FOR.get(e)
        if suffix is not None:
            return f"{m}{suffix}"
        # No SI suffix beyond E (10**18): fall back to an exponent, as upstream does since
        # kubernetes#140459 ("1000E" -> "1e21"; before, the magnitude was silently dropped).
    return f"{m}e{e}" if e else str(m)


ZERO: Final = _new(0, 0, DECIMAL_SI)
