"""A click log in TalkingData's shape, with a hidden download model: `ip,app,device,os,channel,click_time,
attributed_time,is_attributed`, one row per click, rare positives (~0.2%), heavy-tailed (Zipf) ids.

    logit = b + a_app + c_channel + o_os + d_device + h_hour + u_ip + x_(app, os)
    P(download | click) = sigmoid(logit),   b chosen so that the mean probability is `positive_rate`

Per-id effects are normal draws (the app dominates, as in the real log; `x` is an app × os interaction a
linear model cannot express); `effect_scale` multiplies their spread (the real install log ranks at AUC ~0.97, far
above the defaults' ~0.75). A download is attributed an exponential delay (mean 1 h) after the click.

Repeated clicks (`repeat_share` > 0, off by default): click fraud and impatient users click the same ad again
within minutes, and such repeats rarely install — what history features over the ip and the ip-app pair can see
and an id's embedding cannot. A share of extra rows repeats an earlier click (same ip, app, device, os, channel) an
exponential delay later (mean `repeat_delay_seconds`), its logit the earlier click's − `repeat_penalty`.
Same spec → the same bytes. Preprocess it with `configs/examples/click_log.yaml`:

    .venv/bin/python -m components.logs.click_log --output /tmp/clicks.csv
    adrank run --config configs/examples/click_log.yaml --set logs.impressions=/tmp/clicks.csv
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

COLUMNS = ("ip", "app", "device", "os", "channel", "click_time", "attributed_time", "is_attributed")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
MEAN_ATTRIBUTION_DELAY_SECONDS = 3600.0
DAY_SECONDS = 86_400


@dataclass(frozen=True)
class ClickLogSpec:
    """How big and how hard the log is. The defaults write ~240k rows (~11 MB) in a few seconds."""

    seed: int = 0
    start_date: dt.date = dt.date(2017, 11, 6)
    days: int = 4
    clicks_per_day: int = 60_000
    positive_rate: float = 0.002
    ips: int = 40_000
    apps: int = 300
    devices: int = 400
    oses: int = 200
    channels: int = 180
    effect_scale: float = 1.0
    repeat_share: float = 0.0
    repeat_delay_seconds: float = 300.0
    repeat_penalty: float = 3.0


@dataclass(frozen=True)
class ClickLog:
    path: Path
    clicks: int
    positives: int
    bayes_logloss: float

    @property
    def positive_rate(self) -> float:
        return self.positives / self.clicks


def zipf_weights(n: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** exponent
    return weights / weights.sum()


def _bias_for_rate(logits: np.ndarray, rate: float) -> float:
    """The intercept b with mean(sigmoid(logits + b)) = rate (bisection; the mean is monotone in b)."""
    low, high = -30.0, 30.0
    for _ in range(60):
        middle = (low + high) / 2
        if np.mean(_sigmoid(logits + middle)) < rate:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _with_repeats(spec: ClickLogSpec, ranks: dict[str, np.ndarray], seconds: np.ndarray, logits: np.ndarray,
                  ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The rows with `repeat_share` × rows more: each repeats a click drawn uniformly (its ids) a delay later, its
    logit lowered by `repeat_penalty`; all in time order. Drawn from a generator of its own, so the other draws
    are those of a log without repeats."""
    extra = np.random.default_rng([spec.seed, 1])
    parents = extra.integers(0, len(seconds), size=round(len(seconds) * spec.repeat_share))
    repeat_seconds = seconds[parents] + 1 + extra.exponential(spec.repeat_delay_seconds, parents.size).astype(np.int64)
    inside = repeat_seconds < spec.days * DAY_SECONDS
    parents, repeat_seconds = parents[inside], repeat_seconds[inside]
    all_seconds = np.concatenate([seconds, repeat_seconds])
    order = np.argsort(all_seconds, kind="stable")
    all_ranks = {name: np.concatenate([values, values[parents]])[order] for name, values in ranks.items()}
    all_logits = np.concatenate([logits, logits[parents] - spec.repeat_penalty])[order]
    return all_ranks, all_seconds[order], all_logits


def write_click_log(path: str | Path, spec: ClickLogSpec = ClickLogSpec()) -> ClickLog:
    """Write the CSV (rows in click-time order) and return its size, positives and Bayes log-loss."""
    if not 0 < spec.positive_rate < 1:
        raise ValueError(f"positive_rate must be in (0, 1), got {spec.positive_rate}")
    if spec.effect_scale <= 0 or not 0 <= spec.repeat_share < 1 or spec.repeat_delay_seconds <= 0:
        raise ValueError("effect_scale and repeat_delay_seconds must be > 0 and repeat_share in [0, 1)")
    if spec.days < 2 or spec.clicks_per_day < 1:
        raise ValueError("a click log needs at least 2 days (train and eval) and 1 click per day")
    rng = np.random.default_rng(spec.seed)
    n = spec.days * spec.clicks_per_day
    # Ids are drawn by Zipf rank, then mapped to scattered integer ids as in the real log.
    ids = {
        "ip": rng.permutation(spec.ips * 3)[: spec.ips] + 1,
        "app": rng.permutation(spec.apps * 2)[: spec.apps] + 1,
        "device": np.arange(1, spec.devices + 1),  # device 1 dominates, as in TalkingData
        "os": rng.permutation(spec.oses * 2)[: spec.oses] + 1,
        "channel": rng.permutation(spec.channels * 3)[: spec.channels] + 100,
    }
    exponents = {"ip": 1.05, "app": 1.2, "device": 1.8, "os": 1.3, "channel": 1.0}
    scales = {"ip": 0.9, "app": 1.4, "device": 0.5, "os": 0.5, "channel": 0.8}
    ranks = {name: rng.choice(len(ids[name]), size=n, p=zipf_weights(len(ids[name]), exponents[name])) for name in ids}
    effects = {name: rng.normal(0.0, scales[name] * spec.effect_scale, size=len(ids[name])) for name in ids}
    app_os = rng.normal(0.0, spec.effect_scale, size=(spec.apps, spec.oses))
    hour_effect = 0.4 * np.sin(np.arange(24) / 24 * 2 * np.pi) + rng.normal(0, 0.1, size=24)

    seconds = np.sort(rng.integers(0, spec.days * DAY_SECONDS, size=n))
    hours = (seconds % DAY_SECONDS) // 3600
    logits = sum(effects[name][ranks[name]] for name in ids) + app_os[ranks["app"], ranks["os"]] + hour_effect[hours]
    if spec.repeat_share > 0:
        ranks, seconds, logits = _with_repeats(spec, ranks, seconds, logits)
        n = len(seconds)
    logits = logits + _bias_for_rate(logits, spec.positive_rate)
    probabilities = _sigmoid(logits)
    attributed = rng.random(n) < probabilities
    delays = rng.exponential(MEAN_ATTRIBUTION_DELAY_SECONDS, size=n).astype(np.int64)

    start = dt.datetime(spec.start_date.year, spec.start_date.month, spec.start_date.day)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in range(n):
            clicked = start + dt.timedelta(seconds=int(seconds[row]))
            attributed_time = ""
            if attributed[row]:
                attributed_time = (clicked + dt.timedelta(seconds=int(delays[row]))).strftime(TIME_FORMAT)
            writer.writerow((
                ids["ip"][ranks["ip"][row]], ids["app"][ranks["app"][row]], ids["device"][ranks["device"][row]],
                ids["os"][ranks["os"][row]], ids["channel"][ranks["channel"][row]], clicked.strftime(TIME_FORMAT),
                attributed_time, int(attributed[row]),
            ))
    clipped = np.clip(probabilities, 1e-7, 1 - 1e-7)
    bayes = float(-np.mean(np.where(attributed, np.log(clipped), np.log1p(-clipped))))
    return ClickLog(path=path, clicks=n, positives=int(attributed.sum()), bayes_logloss=bayes)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write a TalkingData-shaped click log CSV with a hidden signal.")
    parser.add_argument("--output", required=True, help="CSV path to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--days", type=int, default=ClickLogSpec.days)
    parser.add_argument("--clicks-per-day", type=int, default=ClickLogSpec.clicks_per_day)
    parser.add_argument("--positive-rate", type=float, default=ClickLogSpec.positive_rate)
    args = parser.parse_args(argv)
    try:
        log = write_click_log(args.output, ClickLogSpec(
            seed=args.seed, days=args.days, clicks_per_day=args.clicks_per_day, positive_rate=args.positive_rate,
        ))
    except ValueError as error:
        parser.exit(2, f"error: {error}\n")
    print(f"{log.path}: {log.clicks} clicks, {log.positives} attributed ({log.positive_rate:.3%}), "
          f"Bayes log-loss {log.bayes_logloss:.5f}")


if __name__ == "__main__":
    main()
