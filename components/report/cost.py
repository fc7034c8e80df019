"""What training costs, from the target's price per hour and what the runs measured."""

from __future__ import annotations


def cost_per_run(price_per_hour: float, wall_time_seconds: float) -> float:
    return price_per_hour * wall_time_seconds / 3600.0


def cost_per_million_examples(price_per_hour: float, examples_per_second: float) -> float | None:
    if examples_per_second <= 0:
        return None
    return price_per_hour / (examples_per_second * 3600.0) * 1e6
