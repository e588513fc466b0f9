"""The Kubernetes DRA CEL environment for device selectors, on cel-expr-python."""

from draplan.cel.device import AttrValue, CelDevice
from draplan.cel.errors import CelCompileError, CelError, CelRuntimeError
from draplan.cel.selector import (
    COST_LIMIT,
    MAX_EXPRESSION_BYTES,
    Selector,
    check_without_list_attributes,
    clear_caches,
    compile_selector,
)
from draplan.cel.semver import SemverValue

__all__ = [
    "COST_LIMIT",
    "MAX_EXPRESSION_BYTES",
    "AttrValue",
    "CelCompileError",
    "CelDevice",
    "CelError",
    "CelRuntimeError",
    "Selector",
    "SemverValue",
    "check_without_list_attributes",
    "clear_caches",
    "compile_selector",
]
