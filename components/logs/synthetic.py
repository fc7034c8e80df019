"""`adrank logs generate`: a simulated ad server writing impression and engagement-event logs.

Same config and seed → the same bytes. Next to the logs it writes `ground_truth.json` with the Bayes
log-loss (log-loss of the true label probabilities) of each split and task: the floor any model can reach;
and the same per day (`days`), so the floor of any window of days is known (`bayes_logloss_over_days`), as
daily retraining needs when `logs.synthetic.drift` moves the rates, effects and ids from day to day.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from components.logs.ground_truth import (
    COUNTRIES,
    DEVICE_OS,
    MEAN_DELAY_SECONDS,
    PLACEMENTS,
    Population,
    label_probability,
)
from components.logs.history_effects import HistoryEffects
from components.logs.records import day_start_ms, format_timestamp
from components.logs.split import eval_start_ms
from configs.slices import PreprocessStepConfig

GROUND_TRUTH_FILE = "ground_truth.json"
IMPRESSIONS_DIR = "impressions"
ENGAGEMENTS_DIR = "engagements"
DAY_MS = 86_400_000
EPSILON = 1e-7


@dataclass(frozen=True)
class GeneratedLogs:
    directory: Path
    impressions: int
    engagements: int
    malformed_lines: int

    @property
    def impressions_glob(self) -> str:
        return str(self.directory / IMPRESSIONS_DIR / "*.jsonl")

    @property
    def engagements_glob(self) -> str:
        return str(self.directory / ENGAGEMENTS_DIR / "*.jsonl")


DRIFT_STREAM = 1  # drift draws from its own random stream, so drift off leaves the logs as they were
HISTORY_STREAM = 2  # so do the history effects (components/logs/history_effects.py)


def generate_logs(config: PreprocessStepConfig, output_dir: str | Path) -> GeneratedLogs:
    spec = config.logs.synthetic
    drift = spec.drift
    rng = np.random.default_rng(config.seed)
    drift_rng = np.random.default_rng([config.seed, DRIFT_STREAM])
    history = HistoryEffects(spec.history, np.random.default_rng([config.seed, HISTORY_STREAM]))
    population = Population.draw(rng, spec.users, spec.ads, spec.advertisers, spec.interests,
                                 spec.max_interests_per_user, spec.id_effect_scale)
    user_ranks = np.arange(1, spec.users + 1, dtype=float)
    ad_ranks = np.arange(1, spec.ads + 1, dtype=float)
    placement_weights = np.array([0.35, 0.3, 0.15, 0.15, 0.05])

    impression_lines: list[str] = []
    events: list[tuple[int, str, str]] = []  # (timestamp_ms, impression_id, event_type)
    # split → task → one array per day (labels drawn, and their true probabilities)
    split_labels: dict[str, dict[str, list[np.ndarray]]] = {
        split: {t.name: [] for t in config.tasks} for split in ("train", "eval")}
    split_probabilities: dict[str, dict[str, list[np.ndarray]]] = {
        split: {t.name: [] for t in config.tasks} for split in ("train", "eval")}
    day_truths: list[dict] = []
    boundary = eval_start_ms(spec.start_date + dt.timedelta(days=spec.days), config.split.eval_days)
    base_logit_shift = 0.0

    for day_index in range(spec.days):
        day = spec.start_date + dt.timedelta(days=day_index)
        if day_index > 0 and drift.enabled:
            base_logit_shift += drift_rng.normal(0.0, drift.base_rate_step) if drift.base_rate_step else 0.0
            population = population.drifted(drift_rng, drift.effect_drift)
            population = population.with_newcomers(
                drift_rng, drift.new_users_per_day, drift.new_ads_per_day, spec.max_interests_per_user
            )
            # A newcomer takes the popularity of a random rank of the first population.
            user_ranks = np.concatenate([user_ranks, drift_rng.integers(1, spec.users + 1, drift.new_users_per_day)])
            ad_ranks = np.concatenate([ad_ranks, drift_rng.integers(1, spec.ads + 1, drift.new_ads_per_day)])
        n = spec.impressions_per_day
        timestamps = np.sort(day_start_ms(day) + rng.integers(0, DAY_MS, size=n))
        user = rng.choice(population.users, size=n, p=_zipf_weights(user_ranks, spec.user_zipf_exponent))
        ad = rng.choice(population.ads, size=n, p=_zipf_weights(ad_ranks, spec.ad_zipf_exponent))
        placement = rng.choice(len(PLACEMENTS), size=n, p=placement_weights)
        base_logit: float | np.ndarray = spec.swipe_base_logit + base_logit_shift
        if spec.history.enabled:  # per impression: what the user and the ad did before (history_effects.py)
            base_logit = base_logit + history.logit_shift(user, ad)
        marginal = population.event_probabilities(user, ad, placement, base_logit)
        happened = _draw_event_chain(rng, marginal)
        delays_ms = {
            event: np.rint(rng.exponential(MEAN_DELAY_SECONDS[event] * 1000.0, size=n)).astype(np.int64)
            for event in MEAN_DELAY_SECONDS
        }
        first_id = day_index * n
        for row in range(n):
            impression_id = f"imp-{first_id + row:09d}"
            u, a = int(user[row]), int(ad[row])
            impression_lines.append(json.dumps({
                "impression_id": impression_id,
                "timestamp": format_timestamp(int(timestamps[row])),
                "user_id": f"u{u}",
                "ad_id": f"ad{a}",
                "advertiser_id": f"adv{int(population.ad_advertiser[a])}",
                "ad_category": f"cat{int(population.ad_category[a])}",
                "placement": PLACEMENTS[int(placement[row])],
                "device_os": DEVICE_OS[int(population.user_os[u])],
                "country": COUNTRIES[int(population.user_country[u])],
                "user_age": int(population.user_age[u]),
                "ad_bid": float(population.ad_bid[a]),
                "user_interests": [f"cat{int(i)}" for i in population.user_interests[u]],
            }))
            for event, occurred in happened.items():
                if occurred[row]:
                    events.append((int(timestamps[row] + delays_ms[event][row]), impression_id, event))
        in_eval = timestamps >= boundary
        day_tasks = {}
        for task in config.tasks:
            event_type = task.event_type
            if event_type is None:
                raise ValueError(f"task '{task.name}': the synthetic ad server labels tasks by an event type, and "
                                 "this one has none (a label column is for logs you bring)")
            window_ms = task.attribution_window_seconds * 1000
            labels = happened[event_type] & (delays_ms[event_type] <= window_ms)
            probability = label_probability(marginal[event_type], event_type, task.attribution_window_seconds)
            for split, mask in (("train", ~in_eval), ("eval", in_eval)):
                split_labels[split][task.name].append(labels[mask])
                split_probabilities[split][task.name].append(probability[mask])
            day_tasks[task.name] = _bayes(labels, probability) | {"positives": int(labels.sum())}
        day_truths.append({
            "date": day.isoformat(),
            "examples": n,
            "base_logit_shift": float(base_logit_shift),
            "users": population.users,
            "ads": population.ads,
            "distinct_users_seen": int(np.unique(user).size),
            "users_seen_once": int(np.sum(np.unique(user, return_counts=True)[1] == 1)),
            "distinct_ads_seen": int(np.unique(ad).size),
            "ads_seen_once": int(np.sum(np.unique(ad, return_counts=True)[1] == 1)),
            "tasks": day_tasks,
        })

    events.sort()
    engagement_lines = [
        json.dumps({"event_id": f"ev-{index:09d}", "impression_id": impression_id,
                    "event_type": event, "timestamp": format_timestamp(timestamp)})
        for index, (timestamp, impression_id, event) in enumerate(events)
    ]
    malformed = {
        "impressions": _inject_malformed(rng, impression_lines, spec.malformed_fraction, "impression"),
        "engagements": _inject_malformed(rng, engagement_lines, spec.malformed_fraction, "engagement"),
    }

    out = Path(output_dir)
    _write_shards(out / IMPRESSIONS_DIR, "impressions", impression_lines, spec.shards_per_stream)
    _write_shards(out / ENGAGEMENTS_DIR, "engagements", engagement_lines, spec.shards_per_stream)
    impressions = spec.days * spec.impressions_per_day
    truth = {
        "seed": config.seed,
        "impressions": impressions,
        "engagement_events": len(events),
        "eval_start": format_timestamp(boundary),
        "malformed_lines": malformed,
        "drift": drift.model_dump(),
        "days": day_truths,
        "splits": {
            split: {
                "examples": int(sum(len(x) for x in split_labels[split][config.tasks[0].name])),
                "tasks": {
                    task: _bayes(np.concatenate(split_labels[split][task]), np.concatenate(split_probabilities[split][task]))
                    for task in split_labels[split]
                },
            }
            for split in ("train", "eval")
        },
    }
    (out / GROUND_TRUTH_FILE).write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
    injected = sum(sum(kinds.values()) for kinds in malformed.values())
    return GeneratedLogs(out, impressions, len(events), injected)


def read_ground_truth(logs_dir: str | Path) -> dict | None:
    path = Path(logs_dir) / GROUND_TRUTH_FILE
    return json.loads(path.read_text()) if path.exists() else None


def bayes_logloss_over_days(truth: dict, task: str, dates: list[dt.date] | list[str]) -> float | None:
    """The Bayes floor of `task` on the impressions of `dates` (e.g. one day's eval window under drift):
    the example-weighted mean of the per-day floors in `truth["days"]`. None when a date has no record
    (logs written before per-day truth, or a day outside the generated logs)."""
    by_date = {day["date"]: day for day in truth.get("days", [])}
    wanted = [d.isoformat() if isinstance(d, dt.date) else str(d) for d in dates]
    if not wanted or any(d not in by_date or task not in by_date[d]["tasks"] for d in wanted):
        return None
    examples = sum(by_date[d]["examples"] for d in wanted)
    return sum(by_date[d]["tasks"][task]["bayes_logloss"] * by_date[d]["examples"] for d in wanted) / examples


def _draw_event_chain(rng: np.random.Generator, marginal: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sample view and swipe, then install given swipe and purchase given install, matching the marginals."""
    n = marginal["swipe"].size
    swipe = rng.random(n) < marginal["swipe"]
    install = swipe & (rng.random(n) < marginal["install"] / marginal["swipe"])
    purchase = install & (rng.random(n) < marginal["purchase"] / np.maximum(marginal["install"], EPSILON))
    view = rng.random(n) < marginal["view"]
    return {"view": view, "swipe": swipe, "install": install, "purchase": purchase}


def _bayes(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    p = np.clip(probabilities, EPSILON, 1 - EPSILON)
    loss = -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)) if labels.size else float("nan")
    return {
        "bayes_logloss": float(loss),
        "positive_rate": float(labels.mean()) if labels.size else float("nan"),
        "mean_probability": float(probabilities.mean()) if labels.size else float("nan"),
    }


def _zipf_weights(ranks: np.ndarray, exponent: float) -> np.ndarray:
    """Sampling weights of ids whose popularity ranks are `ranks` (1 = most popular)."""
    weights = 1.0 / ranks ** exponent
    return weights / weights.sum()


MALFORMED_KINDS = {
    "impression": ("truncated_json", "missing_field", "bad_timestamp", "wrong_type"),
    "engagement": ("truncated_json", "missing_field", "bad_timestamp", "unknown_event_type"),
}


def _inject_malformed(rng: np.random.Generator, lines: list[str], fraction: float, stream: str) -> dict[str, int]:
    """Insert corrupt lines (as a flaky logger would) at random places; returns how many of each kind."""
    count = int(round(fraction * len(lines)))
    kinds = MALFORMED_KINDS[stream]
    injected = {kind: 0 for kind in kinds}
    if count == 0:
        return injected
    positions = np.sort(rng.integers(0, len(lines) + 1, size=count))[::-1]
    originals = list(lines)  # corrupt copies of well-formed lines only, never of an already corrupt one
    for position in positions:
        kind = kinds[int(rng.integers(len(kinds)))]
        source = json.loads(originals[int(rng.integers(len(originals)))])
        if kind == "truncated_json":
            text = json.dumps(source)[: max(5, len(json.dumps(source)) // 2)]
        elif kind == "missing_field":
            source.pop("impression_id")
            text = json.dumps(source)
        elif kind == "bad_timestamp":
            source["timestamp"] = "yesterday at noon"
            text = json.dumps(source)
        elif kind == "wrong_type":
            source["user_age"] = "forty"
            text = json.dumps(source)
        else:
            source["event_type"] = "teleport"
            text = json.dumps(source)
        lines.insert(int(position), text)
        injected[kind] += 1
    return injected


def _write_shards(directory: Path, stem: str, lines: list[str], shards: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob(f"{stem}-*.jsonl"):
        old.unlink()
    for shard in range(shards):
        chunk = lines[shard::shards]
        path = directory / f"{stem}-{shard:05d}-of-{shards:05d}.jsonl"
        path.write_text("".join(line + "\n" for line in chunk))
