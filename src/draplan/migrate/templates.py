"""One ResourceClaimTemplate per distinct claim shape and namespace, with a free name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from draplan.api.codec import decode
from draplan.api.resource_v1 import ResourceClaimSpec, ResourceClaimTemplate
from draplan.migrate.edits import Path
from draplan.migrate.shapes import ClaimShape, template_object


@dataclass
class TemplateResult:
    """A template the migration uses; `emitted` is False when the input already has it."""

    namespace: str
    name: str
    shape: ClaimShape
    obj: dict[str, Any]
    emitted: bool
    location: tuple[int, int, Path]  # its first user: file, chunk, object path
    used_by: list[str] = field(default_factory=list)


class Templates:
    """Names templates, reusing an equal one from the input and avoiding different ones."""

    def __init__(self, existing: Sequence[ResourceClaimTemplate]) -> None:
        self._existing: dict[tuple[str, str], ResourceClaimSpec] = {
            (t.metadata.namespace, t.metadata.name): t.spec.spec for t in existing
        }
        self._by_shape: dict[tuple[str, ClaimShape], TemplateResult] = {}
        self._taken: set[tuple[str, str]] = set()
        self.results: list[TemplateResult] = []

    def assign(
        self, namespace: str, shape: ClaimShape, user: str, location: tuple[int, int, Path]
    ) -> str:
        """The template name for `shape` in `namespace`; `user` is recorded for the report."""
        hit = self._by_shape.get((namespace, shape))
        if hit is None:
            hit = self._new(namespace, shape, location)
            self._by_shape[(namespace, shape)] = hit
            self.results.append(hit)
        hit.used_by.append(user)
        return hit.name

    def _new(
        self, namespace: str, shape: ClaimShape, location: tuple[int, int, Path]
    ) -> TemplateResult:
        base = shape.default_name()
        name, n = base, 1
        while True:
            obj = template_object(name, namespace, shape)
            typed = decode(obj, source="(generated)")  # every generated object must validate
            assert isinstance(typed, ResourceClaimTemplate)
            have = self._existing.get((namespace, name))
            if (namespace, name) not in self._taken and have in (None, typed.spec.spec):
                break
            n += 1
            name = f"{base}-{n}"
        self._taken.add((namespace, name))
        return TemplateResult(namespace, name, shape, obj, have is None, location)
