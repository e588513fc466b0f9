"""Why is this pod pending, and where is capacity stranded."""

from draplan.audit.why import CATEGORIES, Diagnosis, why

__all__ = ["CATEGORIES", "Diagnosis", "why"]
