"""Prices for the openb trace's GPU models, from the table shipped in `sim/data`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

PRICES_FILE = "src/draplan/sim/data/openb-prices.yaml"


@dataclass(frozen=True)
class GpuPrice:
    per_gpu_hour: float
    instance: str  # the public instance the price is taken from


@cache
def load_prices() -> dict[str, GpuPrice]:
    text = resources.files("draplan.sim").joinpath("data/openb-prices.yaml").read_text("utf-8")
    return {
        model: GpuPrice(float(entry["perGpuHour"]), str(entry["instance"]))
        for model, entry in yaml.safe_load(text).items()
    }


def gpu_hour_price(model: str) -> float:
    """$ per GPU-hour of `model`; 0 for a model the table does not know (or a CPU node)."""
    price = load_prices().get(model)
    return price.per_gpu_hour if price is not None else 0.0
