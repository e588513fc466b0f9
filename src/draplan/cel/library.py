"""The Kubernetes `quantity` and `semver` CEL libraries as cel-expr-python declarations.

cel-expr-python registers one Python implementation per (name, argument kinds), so the member
functions that exist for both types (`compareTo`, `isGreaterThan`, `isLessThan`) declare two typed
overloads for the checker but attach one implementation that dispatches on the message type.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from draplan.api.quantity import Quantity
from draplan.cel.messages import (
    QUANTITIES,
    QUANTITY_TYPE,
    SEMVER_TYPE,
    SEMVERS,
    quantity_message,
    semver_message,
    unwrap,
)
from draplan.cel.semver import SemverValue

_INT64_MAX = 2**63 - 1

QUANTITY = cel.Type(QUANTITY_TYPE)
SEMVER = cel.Type(SEMVER_TYPE)
_INT, _BOOL, _STRING, _DOUBLE = cel.Type.INT, cel.Type.BOOL, cel.Type.STRING, cel.Type.DOUBLE


@lru_cache(maxsize=4096)
def _parse_semver(text: str, normalize: bool) -> Any:
    return semver_message(SemverValue.parse(text, normalize))


def _quantity(text: str) -> Any:
    return quantity_message(Quantity.parse(text))


def _is_quantity(text: str) -> bool:
    try:
        Quantity.parse(text)
    except ValueError:
        return False
    return True


def _semver(text: str, normalize: bool = False) -> Any:
    return _parse_semver(text, normalize)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _compare(receiver: Any, other: Any) -> int:
    mine, theirs = unwrap(receiver), unwrap(other)
    if isinstance(mine, Quantity) and isinstance(theirs, Quantity):
        return mine.compare(theirs)
    if isinstance(mine, SemverValue) and isinstance(theirs, SemverValue):
        return mine.compare(theirs)
    raise TypeError(
        f"no such overload: {receiver.DESCRIPTOR.full_name}.compareTo({other.DESCRIPTOR.full_name})"
    )


def _is_greater_than(receiver: Any, other: Any) -> bool:
    return _compare(receiver, other) == 1


def _is_less_than(receiver: Any, other: Any) -> bool:
    return _compare(receiver, other) == -1


def _operand(value: Any) -> Quantity:
    # Integers are exact decimal quantities (upstream: NewQuantity(i, DecimalExponent)).
    return Quantity.from_int(value) if isinstance(value, int) else QUANTITIES.value(value)


def _add(receiver: Any, other: Any) -> Any:
    return quantity_message(QUANTITIES.value(receiver) + _operand(other))


def _sub(receiver: Any, other: Any) -> Any:
    return quantity_message(QUANTITIES.value(receiver) - _operand(other))


def _sign(receiver: Any) -> int:
    return QUANTITIES.value(receiver).sign()


def _is_integer(receiver: Any) -> bool:
    value = QUANTITIES.value(receiver)
    if not value.is_integer():
        return False
    try:
        value.as_int64()
    except OverflowError:
        return False
    return True


def _as_integer(receiver: Any) -> int:
    if not _is_integer(receiver):
        raise ValueError("cannot convert value to integer")
    return QUANTITIES.value(receiver).as_int64()


def _as_approximate_float(receiver: Any) -> float:
    return QUANTITIES.value(receiver).as_float()


def _semver_part(index: int) -> Any:
    def part(receiver: Any) -> int:
        value = SEMVERS.value(receiver)
        number = (value.major, value.minor, value.patch)[index]
        if number > _INT64_MAX:
            raise OverflowError("integer overflow")
        return number

    return part


def _same(a: Any, b: Any) -> bool:
    # CEL's equality across kinds is false (1 != true), unlike Python's; versions compare by
    # semver precedence.
    if type(a) is not type(b):
        return False
    if isinstance(a, bool | int | str):
        return bool(a == b)
    return _compare(a, b) == 0


def _list_includes(receiver: Any, item: Any) -> bool:
    return any(_same(x, item) for x in receiver)


def _overload(
    oid: str, result: Any, params: list[Any], member: bool, impl: Any = None
) -> cel.Overload:
    # impl=None declares a typed overload whose implementation another overload carries.
    if impl is None:
        return cel.Overload(oid, result, params, is_member=member)
    return cel.Overload(oid, result, params, is_member=member, impl=impl)


def list_declarations() -> list[cel.FunctionDecl]:
    """KEP-5491's `includes()` (DRAListTypeAttributes): `x.includes(v)` is `v in x` for a
    list-typed attribute and `x == v` for a scalar one, so a selector reads the same while a
    driver moves an attribute from a scalar to a list."""
    overloads = []
    for name, kind in (("int", _INT), ("bool", _BOOL), ("string", _STRING), ("semver", SEMVER)):
        overloads.append(
            _overload(
                f"list_{name}_includes", _BOOL, [cel.Type.List(kind), kind], True, _list_includes
            )
        )
        overloads.append(_overload(f"{name}_includes", _BOOL, [kind, kind], True, _same))
    return [cel.FunctionDecl("includes", overloads)]


def declarations() -> list[cel.FunctionDecl]:
    """Function declarations for `cel.NewEnv(functions=...)`."""
    q, s = QUANTITY, SEMVER
    fn = cel.FunctionDecl
    return [
        fn("quantity", [_overload("string_to_quantity", q, [_STRING], False, _quantity)]),
        fn("isQuantity", [_overload("is_quantity_string", _BOOL, [_STRING], False, _is_quantity)]),
        fn(
            "semver",
            [
                _overload("string_to_semver", s, [_STRING], False, _semver),
                _overload("string_bool_to_semver", s, [_STRING, _BOOL], False, _semver),
            ],
        ),
        fn(
            "isSemver",
            [
                _overload("is_semver_string", _BOOL, [_STRING], False, _is_semver),
                _overload("is_semver_string_bool", _BOOL, [_STRING, _BOOL], False, _is_semver),
            ],
        ),
        fn(
            "compareTo",
            [
                _overload("quantity_compare_to", _INT, [q, q], True, _compare),
                _overload("semver_compare_to", _INT, [s, s], True),
            ],
        ),
        fn(
            "isGreaterThan",
            [
                _overload("quantity_is_greater_than", _BOOL, [q, q], True, _is_greater_than),
                _overload("semver_is_greater_than", _BOOL, [s, s], True),
            ],
        ),
        fn(
            "isLessThan",
            [
                _overload("quantity_is_less_than", _BOOL, [q, q], True, _is_less_than),
                _overload("semver_is_less_than", _BOOL, [s, s], True),
            ],
        ),
        fn(
            "add",
            [
                _overload("quantity_add", q, [q, q], True, _add),
                _overload("quantity_add_int", q, [q, _INT], True, _add),
            ],
        ),
        fn(
            "sub",
            [
                _overload("quantity_sub", q, [q, q], True, _sub),
                _overload("quantity_sub_int", q, [q, _INT], True, _sub),
            ],
        ),
        # Upstream declares sign() as a global function; the member form is what the docs show.
        fn(
            "sign",
            [
                _overload("quantity_sign", _INT, [q], False, _sign),
                _overload("quantity_sign_member", _INT, [q], True, _sign),
            ],
        ),
        fn("isInteger", [_overload("quantity_is_integer", _BOOL, [q], True, _is_integer)]),
        fn("asInteger", [_overload("quantity_get_int", _INT, [q], True, _as_integer)]),
        fn(
            "asApproximateFloat",
            [_overload("quantity_get_float", _DOUBLE, [q], True, _as_approximate_float)],
        ),
        fn("major", [_overload("semver_major", _INT, [s], True, _semver_part(0))]),
        fn("minor", [_overload("semver_minor", _INT, [s], True, _semver_part(1))]),
        fn("patch", [_overload("semver_patch", _INT, [s], True, _semver_part(2))]),
    ]
