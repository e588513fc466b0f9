"""`draplan migrate`: device-plugin counts in manifests rewritten into DRA claims.

`migrate()` reads the files, plans every pod spec (`plan`), edits the text in place (`render`,
`edits`) and returns a `Migration`; `report` turns it into output. A `check.CheckStep` can
schedule the result once the scheduler exists.
"""

from draplan.migrate.check import CheckRow, CheckStep
from draplan.migrate.plan import TOPOLOGY_MODES, Migration, Recreated, SiteResult, migrate

__all__ = [
    "TOPOLOGY_MODES",
    "CheckRow",
    "CheckStep",
    "Migration",
    "Recreated",
    "SiteResult",
    "migrate",
]
