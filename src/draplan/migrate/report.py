"""What `draplan migrate` prints: the migrated manifests, a diff, or the decisions as rows."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from draplan.migrate.plan import Migration, Recreated, SiteResult


def manifests(migration: Migration) -> str:
    """Every input file but the cluster snapshots, rewritten, as one YAML stream."""
    parts = [f.text for f in migration.files if not f.cluster_only and f.text.strip()]
    out = ""
    for text in parts:
        if out:
            out += "" if text.startswith("---") else "---\n"
        out += text if text.endswith("\n") else text + "\n"
    return out


def diff(migration: Migration) -> str:
    """A unified diff of each changed file."""
    out: list[str] = []
    for f in migration.files:
        if f.changed:
            lines = difflib.unified_diff(
                f.original.splitlines(keepends=True),
                f.text.splitlines(keepends=True),
                fromfile=f"a/{f.source}",
                tofile=f"b/{f.source}",
            )
            out.extend(line if line.endswith("\n") else line + "\n" for line in lines)
    return "".join(out)


SITE_HEADERS = ("OBJECT", "DEVICES", "TEMPLATE", "TOPOLOGY", "WHY")
TEMPLATE_HEADERS = ("TEMPLATE", "REQUESTS", "CONSTRAINT", "USED BY")
CHECK_HEADERS = ("OBJECT", "BEFORE", "AFTER", "REASON")


RECREATE_HEADERS = ("OBJECT", "DEVICES", "MIGRATED")


def _devices(site: SiteResult | Recreated) -> str:
    parts = []
    for need in site.needs:
        where = "init " if need.field == "initContainers" else ""
        parts.append(f"{where}{need.container}: {need.count} {need.resource}")
    return "; ".join(parts)


def site_rows(migration: Migration) -> Iterator[tuple[str, ...]]:
    for site in migration.sites:
        attribute = site.decision.attribute
        why = "; ".join((site.decision.reason, *site.notes))
        yield (
            f"{site.source}: {site.label}",
            _devices(site),
            site.template or "-",
            f"matchAttribute {attribute}" if attribute else "none",
            why,
        )


def recreate_rows(migration: Migration) -> Iterator[tuple[str, ...]]:
    for r in migration.recreated:
        yield f"{r.source}: {r.label}", _devices(r), r.how


def template_rows(migration: Migration) -> Iterator[tuple[str, ...]]:
    for t in migration.templates:
        requests = ", ".join(
            f"{r.name}: {r.count} {r.device_class}" + (" (selector)" if r.selectors else "")
            for r in t.shape.requests
        )
        name = f"{t.namespace}/{t.name}" if t.namespace else t.name
        if not t.emitted:
            name += " (exists)"
        yield name, requests, t.shape.match_attribute or "-", ", ".join(t.used_by)


def check_rows(migration: Migration) -> Iterator[tuple[str, ...]]:
    for row in migration.checks:
        yield row.site, row.before, row.after, row.reason


def summary(migration: Migration) -> str:
    changed = sum(1 for f in migration.files if f.changed)
    emitted = sum(1 for t in migration.templates if t.emitted)
    recreated = (
        f"; {len(migration.recreated)} objects made again from their controllers or manifests"
        if migration.recreated
        else ""
    )
    return (
        f"{len(migration.sites)} pod templates migrated in {changed} files, "
        f"{emitted} ResourceClaimTemplates added{recreated}"
    )
