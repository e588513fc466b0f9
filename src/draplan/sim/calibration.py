"""Job statistics the synthetic workload is calibrated to, taken from public traces
(shared/data/job-stats; a test recomputes them): Philly GPU job run times, and the typical
GPU count per job of the Acme, Helios and Philly clusters."""

from __future__ import annotations

import bisect
import math
import random

# (quantile, run time in seconds) of 83,154 Philly GPU jobs.
PHILLY_RUNTIME_QUANTILES: tuple[tuple[float, float], ...] = (
    (0.05, 48.0), (0.1, 61.0), (0.2, 76.0), (0.3, 229.0), (0.4, 630.0), (0.5, 1186.0),
    (0.6, 1871.0), (0.7, 2590.0), (0.8, 4699.0), (0.9, 12858.0), (0.95, 49936.0),
    (0.99, 287239.0),
)  # fmt: skip
# Median GPUs per job is 1 on every cluster; the mean ranges from 1.9 (Philly) to 5.7 (Seren).
MEDIAN_GPUS_PER_JOB = 1
MEAN_GPUS_PER_JOB = {"Philly": 1.928, "Helios": 3.716, "Seren": 5.68, "Kalos": 26.77}


def sample_runtime(rng: random.Random, low: float = 0.0, high: float = 1.0) -> float:
    """A run time drawn from the Philly distribution between quantiles `low` and `high`
    (log-linear between the tabulated quantiles)."""
    q = low + (high - low) * rng.random()
    qs = [p for p, _ in PHILLY_RUNTIME_QUANTILES]
    i = bisect.bisect_left(qs, q)
    if i == 0:
        return PHILLY_RUNTIME_QUANTILES[0][1] * q / qs[0]
    if i >= len(qs):
        return PHILLY_RUNTIME_QUANTILES[-1][1]
    (q0, v0), (q1, v1) = PHILLY_RUNTIME_QUANTILES[i - 1], PHILLY_RUNTIME_QUANTILES[i]
    t = (q - q0) / (q1 - q0)
    return math.exp(math.log(v0) + t * (math.log(v1) - math.log(v0)))
