"""Evaluations per second of a typical DRA selector over 1,000 distinct devices.

cold:     caches cleared before each round (program compiled outside the timing): every device
          is converted to CEL input and evaluated.
uncached: device inputs prepared, result cache bypassed (`Selector.evaluate`): the CEL cost alone.
cached:   every (selector, device) answer already known: a dict lookup.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from draplan.api.quantity import Quantity
from draplan.cel import CelDevice, SemverValue, clear_caches, compile_selector

SELECTOR = (
    'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu" && '
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
)
DEVICES = 1000
ROUNDS = 5


def make_devices(count: int = DEVICES) -> list[CelDevice]:
    """GPUs of 100 nodes: equal but for index, uuid and (per node) memory size."""
    memory = [Quantity("24Gi"), Quantity("40Gi"), Quantity("80Gi")]
    devices = []
    for i in range(count):
        node = i // 10
        devices.append(
            CelDevice(
                key=("gpu.nvidia.com", f"node-{node}", f"gpu-{i % 10}"),
                driver="gpu.nvidia.com",
                attributes={
                    "type": "gpu",
                    "index": i % 10,
                    "uuid": f"GPU-{i:08x}-0000-0000-0000-000000000000",
                    "productName": "NVIDIA H100 80GB HBM3",
                    "architecture": "Hopper",
                    "driverVersion": SemverValue.parse("550.54.15"),
                    "cudaComputeCapability": SemverValue.parse("9.0.0"),
                    "resource.kubernetes.io/pcieRoot": f"pci0000:{node % 4:02x}",
                },
                capacity={"memory": memory[node % 3]},
            )
        )
    return devices


def _rate(devices: list[CelDevice], round_: Callable[[], object]) -> float:
    """Best evaluations per second over ROUNDS runs of `round_` (one pass over `devices`)."""
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        round_()
        best = min(best, time.perf_counter() - start)
    return len(devices) / best


def run() -> dict[str, object]:
    """Measure cold, uncached and cached evaluation rates; returns them with the match count."""
    devices = make_devices()
    cold_best = float("inf")
    for _ in range(ROUNDS):
        clear_caches()
        selector = compile_selector(SELECTOR)
        start = time.perf_counter()
        for device in devices:
            selector.matches(device)
        cold_best = min(cold_best, time.perf_counter() - start)
    selector = compile_selector(SELECTOR)
    matched = sum(selector.matches(device) for device in devices)
    uncached = _rate(devices, lambda: [selector.evaluate(device) for device in devices])
    cached = _rate(devices, lambda: [selector.matches(device) for device in devices])
    clear_caches()
    return {
        "selector": SELECTOR,
        "devices": len(devices),
        "matched": matched,
        "cold_evals_per_s": round(len(devices) / cold_best),
        "uncached_evals_per_s": round(uncached),
        "cached_evals_per_s": round(cached),
    }


if __name__ == "__main__":
    print(json.dumps(run()))
