"""Compiling and evaluating DRA device selectors, with a program cache and a result cache.

Kubernetes rules reproduced here that cel-expr-python does not give for free:
* an unknown attribute/capacity domain reads as an empty map (`draplan.cel.domains`, and for
  lookups the text does not show, `Selector._evaluate`);
* the result must be a bool, statically (bool or dyn) and at run time;
* any runtime error raises.
cel-expr-python cannot meter cost, so the upstream runtime limit of 1,000,000 cost units is not
enforced; the expression length is capped at 10 KiB (upstream's validation limit) and the engine's
own budget of 10,000 comprehension iterations per evaluation applies.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from contextlib import suppress
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings

from draplan.cel.device import CelDevice, device_data
from draplan.cel.domains import optional_domains
from draplan.cel.errors import CelCompileError, CelRuntimeError
from draplan.cel.library import declarations, list_declarations
from draplan.cel.messages import POOL
from draplan.cel.reads import content_key, reads

MAX_EXPRESSION_BYTES = 10 * 1024  # CELSelectorExpressionMaxLength
COST_LIMIT = 1_000_000  # CELSelectorExpressionMaxCost; documented, not enforceable here
COMPILE_CACHE_SIZE = 1024
_MAX_CACHED = 1_000_000  # entries per cache before it is dropped wholesale
_MAX_DOMAIN_FILLS = 64  # retries that add an empty domain map; one per distinct missing key

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r"\s*\[[A-Z_]+\]$")
_MISSING_KEY = re.compile(r"Key not found in map : (['\"])(.*)\1$")

# Caches are keyed by the CelDevice object, not its (driver, pool, name): a republished device
# with new attributes is a new object. The entry keeps the object so its id is never reused.
_results: dict[tuple[str, int], tuple[CelDevice, bool | CelRuntimeError]] = {}
# Results by what a selector can see of a device (`draplan.cel.reads`): identical devices
# share one evaluation. Only results, not errors, whose message names the device.
_by_content: dict[tuple[str, Hashable], bool] = {}
# Per device, its CEL input as an Activation: converting the input costs more than evaluating
# a typical selector, so it is done once per device and shared by all selectors.
_activations: dict[int, tuple[CelDevice, cel.Activation | CelRuntimeError]] = {}


def _new_env(list_attributes: bool = True) -> cel.Env:
    return cel.NewEnv(
        descriptor_pool=POOL,
        # Map of dyn rather than a message: attribute values are int|bool|string|Semver, which
        # no protobuf field type can hold.
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[
            ext_bindings.ExtBindings(),
            ext_strings.ExtStrings(),
            ext_math.ExtMath(),
            ext_optional.ExtOptional(),
        ],
        functions=declarations() + (list_declarations() if list_attributes else []),
    )


_ENV = _new_env()
# Without DRAListTypeAttributes there is no includes(): only used to reject such selectors.
_ENV_SCALAR = _new_env(list_attributes=False)


class Selector:
    """A compiled selector; `matches` is cached per device key."""

    __slots__ = ("_program", "_reads", "expression")

    def __init__(self, expression: str, program: cel.Expression) -> None:
        self.expression = expression
        self._program = program
        self._reads = reads(expression)

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"

    def matches(self, device: CelDevice) -> bool:
        """Whether the device is selected; raises CelRuntimeError (also cached)."""
        cache_key = (self.expression, id(device))
        hit = _results.get(cache_key)
        if hit is not None and hit[0] is device:
            outcome = hit[1]
        else:
            outcome = self._outcome(device)
            if len(_results) >= _MAX_CACHED:
                _results.clear()
            _results[cache_key] = (device, outcome)
        if isinstance(outcome, CelRuntimeError):
            raise outcome.with_traceback(None)  # reused: keep its traceback from growing
        return outcome

    def _outcome(self, device: CelDevice) -> bool | CelRuntimeError:
        content = (
            None if self._reads is None else (self.expression, content_key(device, self._reads))
        )
        if content is not None:
            known = _by_content.get(content)
            if known is not None:
                return known
        try:
            outcome = self._evaluate(device)
        except CelRuntimeError as err:
            return err
        if content is not None:
            if len(_by_content) >= _MAX_CACHED:
                _by_content.clear()
            _by_content[content] = outcome
        return outcome

    def evaluate(self, device: CelDevice) -> bool:
        """Like `matches`, bypassing the result cache (for benchmarks and tests)."""
        return self._evaluate(device)

    def _evaluate(self, device: CelDevice) -> bool:
        value = self._run(device, _activation_for(device, self.expression), None)
        data: dict[str, Any] | None = None
        for _ in range(_MAX_DOMAIN_FILLS):
            kind = value.type()
            if kind == cel.Type.BOOL:
                return bool(value.value())
            if kind != cel.Type.ERROR:
                raise self._error(device, f"result is {kind.name().lower()}, not bool")
            message = _clean(str(value.value()))
            # Upstream maps an unknown domain to an empty map but keeps `in`, size() and
            # iteration over the real domains. The first evaluation sees only real domains; a
            # lookup of a missing domain is retried with that one domain present and empty.
            missing = _MISSING_KEY.search(message)
            if missing is None:
                raise self._error(device, message)
            key = missing.group(2)
            if data is None:
                data = device_data(device)  # rebuilt: only the Activation is cached
            if key in data["attributes"] and key in data["capacity"]:
                raise self._error(device, f"no such key: {key}")
            data = {
                **data,
                "attributes": {key: {}, **data["attributes"]},
                "capacity": {key: {}, **data["capacity"]},
            }
            value = self._run(device, None, data)
        raise self._error(device, "too many missing attribute domains")

    def _run(
        self, device: CelDevice, activation: cel.Activation | None, data: dict[str, Any] | None
    ) -> cel.Value:
        try:
            if activation is not None:
                return self._program.eval(activation)
            return self._program.eval(data={"device": data})
        except RuntimeError as err:  # raised rather than returned, e.g. "Iteration budget"
            raise self._error(device, _clean(str(err))) from None

    def _error(self, device: CelDevice, message: str) -> CelRuntimeError:
        driver, pool, name = device.key
        return CelRuntimeError(self.expression, f"device {driver}/{pool}/{name}: {message}")


def _activation_for(device: CelDevice, expression: str) -> cel.Activation:
    hit = _activations.get(id(device))
    if hit is not None and hit[0] is device:
        found = hit[1]
    else:
        try:
            found = _ENV.Activation({"device": device_data(device)})
        except ValueError as err:
            found = CelRuntimeError(expression, f"device {'/'.join(device.key)}: {err}")
        if len(_activations) >= _MAX_CACHED:
            _activations.clear()
        _activations[id(device)] = (device, found)
    if isinstance(found, CelRuntimeError):
        raise CelRuntimeError(expression, found.message)
    return found


@lru_cache(maxsize=COMPILE_CACHE_SIZE)
def compile_selector(expression: str) -> Selector:
    """Compile (once per distinct expression) or raise CelCompileError."""
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        raise CelCompileError(expression, f"expression is longer than {MAX_EXPRESSION_BYTES} bytes")
    try:
        program = _ENV.compile(expression)
    except RuntimeError as err:
        raise CelCompileError(expression, _compile_message(str(err))) from None
    result = program.return_type()
    if result != cel.Type.BOOL and result != cel.Type.DYN:
        raise CelCompileError(
            expression, f"must evaluate to bool or the unknown type, not {result.name().lower()}"
        )
    # Errors and the result type come from the text as written; what runs reads missing
    # domains as empty maps (draplan.cel.domains).
    rewritten = optional_domains(expression)
    if rewritten != expression:
        # Not expected to fail; if it did, the retry in Selector._evaluate covers the lookups.
        with suppress(RuntimeError):
            program = _ENV.compile(rewritten)
    return Selector(expression, program)


@lru_cache(maxsize=COMPILE_CACHE_SIZE)
def check_without_list_attributes(expression: str) -> None:
    """Raise CelCompileError if the (valid) expression needs DRAListTypeAttributes' CEL
    functions, as an API server with the gate off rejects it."""
    try:
        _ENV_SCALAR.compile(expression)
    except RuntimeError as err:
        raise CelCompileError(expression, _compile_message(str(err))) from None


def clear_caches() -> None:
    """Forget compiled programs, per-device inputs and results (call between snapshots)."""
    compile_selector.cache_clear()
    check_without_list_attributes.cache_clear()
    _results.clear()
    _by_content.clear()
    _activations.clear()


def _clean(message: str) -> str:
    """One line without the absl status code decorations."""
    return " ".join(_STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", message.strip())).split())


def _compile_message(raw: str) -> str:
    """The checker's "ERROR: <input>:line:col: text" lines, joined; the source echo dropped."""
    lines = [
        _STATUS_SUFFIX.sub("", line.strip()) for line in _STATUS_PREFIX.sub("", raw).splitlines()
    ]
    picked = [
        line.removeprefix("ERROR: ").removeprefix("<input>:")
        for line in lines
        if line.startswith("ERROR: ")
    ]
    return "; ".join(picked) if picked else _clean(raw)
