"""Why is this pod pending, and where is capacity stranded."""

from draplan.audit.metrics import metrics
from draplan.audit.tally import Metrics
from draplan.audit.why import CATEGORIES, Diagnosis, why

__all__ = ["CATEGORIES", "Diagnosis", "Metrics", "metrics", "why"]
