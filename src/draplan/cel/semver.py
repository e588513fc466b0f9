"""Semantic versions (semver 2.0.0) as the DRA `version` attribute and CEL `semver()` see them.

Parsing is strict, like blang/semver `Parse`: exactly `MAJOR.MINOR.PATCH`, no leading zeros, no
`v` prefix, optional `-prerelease` and `+build`. `normalize=True` first applies the Kubernetes CEL
normalisation: drop one leading `v`, drop leading zeros, pad `1` or `1.2` to three numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

_UINT64_MAX = 2**64 - 1
_IDENT_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-")


@dataclass(frozen=True, slots=True)
class SemverValue:
    """An immutable semantic version; `compare` orders by semver precedence (build ignored)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> SemverValue:
        """Parse `text`; raises ValueError when it is not a valid version."""
        if not normalize:
            return _parse_strict(text)
        try:
            return _parse_strict(_normalize(text))
        except ValueError as err:
            raise ValueError(f"{err} (normalized from {text!r})") from None

    def compare(self, other: SemverValue) -> int:
        """-1, 0 or 1 as `self` sorts before, equal to or after `other`."""
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        return _compare_prerelease(self.prerelease, other.prerelease)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _normalize(text: str) -> str:
    """Kubernetes' tolerant form: no `v`, no leading zeros, three numbers."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            # Keep one zero when the number was all zeros or is followed by "-pre"/"+build".
            if not stripped or not stripped[0].isdigit():
                stripped = "0" + stripped
            parts[i] = stripped
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError(f"short version {text!r} cannot contain prerelease or build data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


@lru_cache(maxsize=4096)
def _parse_strict(text: str) -> SemverValue:
    # Cached: every device of a driver publishes the same few versions.
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError(f"invalid semantic version {text!r}: need MAJOR.MINOR.PATCH")
    patch_text = parts[2]
    build: tuple[str, ...] = ()
    prerelease: tuple[str, ...] = ()
    if "+" in patch_text:
        patch_text, build_text = patch_text.split("+", 1)
        build = tuple(build_text.split("."))
        for ident in build:
            if not ident or not _IDENT_CHARS.issuperset(ident):
                raise ValueError(f"invalid semantic version {text!r}: bad build {ident!r}")
    if "-" in patch_text:
        patch_text, pre_text = patch_text.split("-", 1)
        prerelease = tuple(pre_text.split("."))
        for ident in prerelease:
            _check_prerelease(text, ident)
    major, minor, patch = (_number(text, p) for p in (parts[0], parts[1], patch_text))
    return SemverValue(major, minor, patch, prerelease, build)


def _number(text: str, part: str) -> int:
    # str.isdigit() accepts non-ASCII digits; semver allows only 0-9.
    if not part or not part.isascii() or not part.isdigit():
        raise ValueError(f"invalid semantic version {text!r}: {part!r} is not a number")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"invalid semantic version {text!r}: {part!r} has a leading zero")
    value = int(part)
    if value > _UINT64_MAX:
        raise ValueError(f"invalid semantic version {text!r}: {part!r} is too large")
    return value


def _check_prerelease(text: str, ident: str) -> None:
    if not ident or not _IDENT_CHARS.issuperset(ident):
        raise ValueError(f"invalid semantic version {text!r}: bad prerelease {ident!r}")
    if ident.isdigit():
        _number(text, ident)


def _compare_prerelease(mine: tuple[str, ...], theirs: tuple[str, ...]) -> int:
    # A version without prerelease has higher precedence than one with.
    if not mine or not theirs:
        return (not mine) - (not theirs)
    for a, b in zip(mine, theirs, strict=False):
        if a == b:
            continue
        a_num, b_num = a.isdigit(), b.isdigit()
        if a_num and b_num:
            return -1 if int(a) < int(b) else 1
        if a_num != b_num:
            return -1 if a_num else 1  # numeric identifiers sort before alphanumeric ones
        return -1 if a < b else 1
    return (len(mine) > len(theirs)) - (len(mine) < len(theirs))
