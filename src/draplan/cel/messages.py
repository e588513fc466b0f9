"""Protobuf message types that carry Quantity and Semver values through CEL.

cel-expr-python accepts custom types only as protobuf messages. Both types are built at import
time from a `FileDescriptorProto` (no protoc). A message holds only an int64 `handle` into an
interning table, so the Python value never needs re-parsing, and two messages are equal exactly
when their values are equal (CEL `==` on messages compares fields).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from draplan.api.quantity import Quantity
from draplan.cel.semver import SemverValue

QUANTITY_TYPE = "kubernetes.Quantity"
SEMVER_TYPE = "kubernetes.Semver"

V = TypeVar("V", bound=Hashable)


def _build_pool() -> Any:
    proto = descriptor_pb2.FileDescriptorProto(
        name="draplan/cel/types.proto", package="kubernetes", syntax="proto3"
    )
    for name in ("Quantity", "Semver"):
        message = proto.message_type.add(name=name)
        message.field.add(
            name="handle",
            number=1,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


POOL = _build_pool()
QuantityMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(QUANTITY_TYPE))
SemverMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(SEMVER_TYPE))


class _Interner(Generic[V]):
    """Maps equal values to one handle (and one message) and handles back to values.

    Never cleared: compiled programs may hold constant messages, and the number of distinct
    capacities and literals in a cluster snapshot is small.
    """

    def __init__(self, message_class: Any) -> None:
        self._message_class = message_class
        self._values: list[V] = []
        self._messages: dict[V, Any] = {}

    def message(self, value: V) -> Any:
        found = self._messages.get(value)
        if found is None:
            found = self._message_class(handle=len(self._values))
            self._values.append(value)
            self._messages[value] = found
        return found

    def value(self, message: Any) -> V:
        handle: int = message.handle
        return self._values[handle]


QUANTITIES: _Interner[Quantity] = _Interner(QuantityMessage)
# Semver precedence ignores build metadata, so versions are interned without it.
SEMVERS: _Interner[SemverValue] = _Interner(SemverMessage)


def quantity_message(value: Quantity) -> Any:
    """The CEL value for a Quantity."""
    return QUANTITIES.message(value)


def semver_message(value: SemverValue) -> Any:
    """The CEL value for a semantic version (build metadata dropped: it never compares)."""
    if value.build:
        value = SemverValue(value.major, value.minor, value.patch, value.prerelease)
    return SEMVERS.message(value)


def unwrap(message: Any) -> Quantity | SemverValue:
    """The Python value behind a Quantity or Semver message; TypeError for anything else."""
    if type(message) is QuantityMessage:
        return QUANTITIES.value(message)
    if type(message) is SemverMessage:
        return SEMVERS.value(message)
    raise TypeError(f"no such overload for a value of type {type(message).__name__}")
