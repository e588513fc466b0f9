"""Object metadata shared by every kind, and the base struct of the object model."""

from __future__ import annotations

from typing import Annotated

import msgspec

# Integer widths of the API's fields: a value the API server could not hold is refused while
# decoding (Python's ints are unbounded; 2**64 must not reach a loop or a sum).
Int32 = Annotated[int, msgspec.Meta(ge=-(1 << 31), le=(1 << 31) - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
NonNegativeInt64 = Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)]


class KubeStruct(
    msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, kw_only=True, gc=False
):
    """Base of every API value: immutable, camelCase on the wire, empty fields omitted."""


class OwnerReference(KubeStruct, frozen=True):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeStruct, frozen=True):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: NonNegativeInt64 = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()


class LabelSelectorRequirement(KubeStruct, frozen=True):
    key: str
    operator: str
    values: tuple[str, ...] = ()


class LabelSelector(KubeStruct, frozen=True):
    match_labels: dict[str, str] = {}
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class Condition(KubeStruct, frozen=True):
    """metav1.Condition."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: NonNegativeInt64 = 0
