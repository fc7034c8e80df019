"""`adrank logs generate`: a simulated ad server writing impression and engagement-event logs.

Same config and seed → the same bytes. Next to the logs it writes `ground_truth.json` with the Bayes
log-loss (log-loss of the true label probabilities) of each split and task: the floor any model can reach;
and the same per day (`days`), so the floor of any window of days is known (`bayes_logloss_over_days`), as
daily retraining needs when `logs.synthetic.drift` moves the rates, effects and ids from day to day.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


PLACEMENT_WEIGHTS = np.array([0.35, 0.3, 0.15, 0.15, 0.05])  # share of impressions per entry of PLACEMENTS
SPLITS = ("train", "eval")


def generate_logs(config: PreprocessStepConfig, output_dir: str | Path) -> GeneratedLogs:
    """Simulate `logs.synthetic.days` days of the ad server, write both streams (with their malformed lines) as
    JSON-lines shards under `output_dir` and the ground truth beside them."""
    spec = config.logs.synthetic
    _check_tasks_label_events(config)
    rng = np.random.default_rng(config.seed)
    drift_rng = np.random.default_rng([config.seed, DRIFT_STREAM])
    history = HistoryEffects(spec.history, np.random.default_rng([config.seed, HISTORY_STREAM]))
    world = _World.first(rng, config)
    boundary = eval_start_ms(spec.start_date + dt.timedelta(days=spec.days), config.split.eval_days)
    labels = _SplitLabels.empty(config)
    impression_lines: list[str] = []
    events: list[tuple[int, str, str]] = []  # (timestamp_ms, impression_id, event_type)
    day_truths: list[dict] = []
    for day_index in range(spec.days):
        if day_index > 0 and spec.drift.enabled:
            world.drift_one_day(drift_rng, config)
        day = _simulate_day(rng, world, history, config, day_index)
        _append_impressions(day, world.population, impression_lines, events)
        day_tasks = labels.add_day(day, config, boundary, burn_in=day_index < config.split.history_burn_in_days)
        day_truths.append(_day_truth(day, world, day_tasks))

    engagement_lines = _engagement_lines(events)
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
        "drift": spec.drift.model_dump(),
        "days": day_truths,
        "splits": labels.truth(config),
    }
    (out / GROUND_TRUTH_FILE).write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
    injected = sum(sum(kinds.values()) for kinds in malformed.values())
    return GeneratedLogs(out, impressions, len(events), injected)


def _check_tasks_label_events(config: PreprocessStepConfig) -> None:
    """The simulated server labels a task by an event type; a task defined by a label column cannot be made."""
    for task in config.tasks:
        if task.event_type is None:
            raise ValueError(f"task '{task.name}': the synthetic ad server labels tasks by an event type, and "
                             "this one has none (a label column is for logs you bring)")


@dataclass
class _World:
    """What moves from day to day under drift: the users and ads, their popularity ranks (1 = most popular) and
    the shift of the base swipe logit."""

    population: Population
    user_ranks: np.ndarray
    ad_ranks: np.ndarray
    base_logit_shift: float = 0.0

    @classmethod
    def first(cls, rng: np.random.Generator, config: PreprocessStepConfig) -> _World:
        spec = config.logs.synthetic
        population = Population.draw(rng, spec.users, spec.ads, spec.advertisers, spec.interests,
                                     spec.max_interests_per_user, spec.id_effect_scale)
        return cls(population, np.arange(1, spec.users + 1, dtype=float), np.arange(1, spec.ads + 1, dtype=float))

    def drift_one_day(self, drift_rng: np.random.Generator, config: PreprocessStepConfig) -> None:
        """Move the base rate and the id effects, and add the day's newcomers."""
        spec = config.logs.synthetic
        drift = spec.drift
        self.base_logit_shift += drift_rng.normal(0.0, drift.base_rate_step) if drift.base_rate_step else 0.0
        self.population = self.population.drifted(drift_rng, drift.effect_drift)
        self.population = self.population.with_newcomers(
            drift_rng, drift.new_users_per_day, drift.new_ads_per_day, spec.max_interests_per_user
        )
        # A newcomer takes the popularity of a random rank of the first population.
        self.user_ranks = np.concatenate([self.user_ranks,
                                          drift_rng.integers(1, spec.users + 1, drift.new_users_per_day)])
        self.ad_ranks = np.concatenate([self.ad_ranks, drift_rng.integers(1, spec.ads + 1, drift.new_ads_per_day)])


@dataclass(frozen=True)
class _Day:
    """One simulated day: per impression its time, user, ad and placement, the true probability of each event,
    whether the event happened and how long after the impression."""

    index: int
    date: dt.date
    timestamps: np.ndarray
    user: np.ndarray
    ad: np.ndarray
    placement: np.ndarray
    marginal: dict[str, np.ndarray]
    happened: dict[str, np.ndarray]
    delays_ms: dict[str, np.ndarray]
    # per history effect (history_effects.py), each event's true probability had the effect been left out
    marginal_without: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


def _simulate_day(rng: np.random.Generator, world: _World, history: HistoryEffects, config: PreprocessStepConfig,
                  day_index: int) -> _Day:
    spec = config.logs.synthetic
    date = spec.start_date + dt.timedelta(days=day_index)
    n = spec.impressions_per_day
    timestamps = np.sort(day_start_ms(date) + rng.integers(0, DAY_MS, size=n))
    user = rng.choice(world.population.users, size=n, p=_zipf_weights(world.user_ranks, spec.user_zipf_exponent))
    ad = rng.choice(world.population.ads, size=n, p=_zipf_weights(world.ad_ranks, spec.ad_zipf_exponent))
    placement = rng.choice(len(PLACEMENTS), size=n, p=PLACEMENT_WEIGHTS)
    base_logit: float | np.ndarray = spec.swipe_base_logit + world.base_logit_shift
    shifts = history.logit_shifts(user, ad) if spec.history.enabled else {}  # what the user and the ad did before
    if shifts:
        base_logit = base_logit + sum(shifts.values())
    marginal = world.population.event_probabilities(user, ad, placement, base_logit)
    marginal_without = {effect: world.population.event_probabilities(user, ad, placement, base_logit - shift)
                        for effect, shift in shifts.items()}
    happened = _draw_event_chain(rng, marginal)
    delays_ms = {
        event: np.rint(rng.exponential(MEAN_DELAY_SECONDS[event] * 1000.0, size=n)).astype(np.int64)
        for event in MEAN_DELAY_SECONDS
    }
    return _Day(day_index, date, timestamps, user, ad, placement, marginal, happened, delays_ms, marginal_without)


def _append_impressions(day: _Day, population: Population, impression_lines: list[str],
                        events: list[tuple[int, str, str]]) -> None:
    """The day's impressions as log lines, and its events as (timestamp_ms, impression_id, event_type)."""
    first_id = day.index * day.timestamps.size
    for row in range(day.timestamps.size):
        impression_id = f"imp-{first_id + row:09d}"
        u, a = int(day.user[row]), int(day.ad[row])
        impression_lines.append(json.dumps({
            "impression_id": impression_id,
            "timestamp": format_timestamp(int(day.timestamps[row])),
            "user_id": f"u{u}",
            "ad_id": f"ad{a}",
            "advertiser_id": f"adv{int(population.ad_advertiser[a])}",
            "ad_category": f"cat{int(population.ad_category[a])}",
            "placement": PLACEMENTS[int(day.placement[row])],
            "device_os": DEVICE_OS[int(population.user_os[u])],
            "country": COUNTRIES[int(population.user_country[u])],
            "user_age": int(population.user_age[u]),
            "ad_bid": float(population.ad_bid[a]),
            "user_interests": [f"cat{int(i)}" for i in population.user_interests[u]],
        }))
        for event, occurred in day.happened.items():
            if occurred[row]:
                events.append((int(day.timestamps[row] + day.delays_ms[event][row]), impression_id, event))


@dataclass(frozen=True)
class _SplitLabels:
    """Per split and task, one array per day: the labels drawn and their true probabilities."""

    labels: dict[str, dict[str, list[np.ndarray]]]
    probabilities: dict[str, dict[str, list[np.ndarray]]]

    @classmethod
    def empty(cls, config: PreprocessStepConfig) -> _SplitLabels:
        return cls({split: {t.name: [] for t in config.tasks} for split in SPLITS},
                   {split: {t.name: [] for t in config.tasks} for split in SPLITS})

    def add_day(self, day: _Day, config: PreprocessStepConfig, boundary: int, burn_in: bool = False) -> dict[str, dict]:
        """Label the day's impressions per task (the event, within its attribution window); the day's Bayes
        floor and positives per task. A burn-in day (`split.history_burn_in_days`) is in no split."""
        in_eval = day.timestamps >= boundary
        day_tasks: dict[str, dict[str, Any]] = {}
        for task in config.tasks:
            event_type = task.event_type
            assert event_type is not None  # _check_tasks_label_events
            window_ms = task.attribution_window_seconds * 1000
            labels = day.happened[event_type] & (day.delays_ms[event_type] <= window_ms)
            probability = label_probability(day.marginal[event_type], event_type, task.attribution_window_seconds)
            for split, mask in (("train", ~in_eval & (not burn_in)), ("eval", in_eval)):
                self.labels[split][task.name].append(labels[mask])
                self.probabilities[split][task.name].append(probability[mask])
            day_tasks[task.name] = {**_bayes(labels, probability), "positives": int(labels.sum())}
            without = {effect: _refitted_logloss(labels, label_probability(
                           marginal[event_type], event_type, task.attribution_window_seconds))
                       for effect, marginal in day.marginal_without.items()}
            if without:  # the most that knowing each history effect exactly is worth on this day, against the
                # floor with the same intercept refit (which on a finite day can go below the floor itself)
                day_tasks[task.name]["bayes_logloss_without"] = without
                day_tasks[task.name]["bayes_logloss_refitted"] = _refitted_logloss(labels, probability)
        return day_tasks

    def truth(self, config: PreprocessStepConfig) -> dict[str, dict]:
        """Per split: its examples and, per task, the Bayes floor over all its days."""
        return {
            split: {
                "examples": int(sum(len(x) for x in self.labels[split][config.tasks[0].name])),
                "tasks": {
                    task: _bayes(np.concatenate(self.labels[split][task]),
                                 np.concatenate(self.probabilities[split][task]))
                    for task in self.labels[split]
                },
            }
            for split in SPLITS
        }


def _day_truth(day: _Day, world: _World, day_tasks: dict[str, dict]) -> dict:
    """The day's record in ground_truth.json: its population, how many distinct ids it saw, its floors."""
    return {
        "date": day.date.isoformat(),
        "examples": int(day.timestamps.size),
        "base_logit_shift": float(world.base_logit_shift),
        "users": world.population.users,
        "ads": world.population.ads,
        "distinct_users_seen": int(np.unique(day.user).size),
        "users_seen_once": int(np.sum(np.unique(day.user, return_counts=True)[1] == 1)),
        "distinct_ads_seen": int(np.unique(day.ad).size),
        "ads_seen_once": int(np.sum(np.unique(day.ad, return_counts=True)[1] == 1)),
        "tasks": day_tasks,
    }


def _engagement_lines(events: list[tuple[int, str, str]]) -> list[str]:
    """The engagement stream in time order, each event numbered."""
    return [
        json.dumps({"event_id": f"ev-{index:09d}", "impression_id": impression_id,
                    "event_type": event, "timestamp": format_timestamp(timestamp)})
        for index, (timestamp, impression_id, event) in enumerate(sorted(events))
    ]


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


def _refitted_logloss(labels: np.ndarray, probabilities: np.ndarray, iterations: int = 25) -> float:
    """Log-loss of `probabilities` with the one intercept added to their log-odds that fits `labels` best (Newton's
    method): a floor without an effect, where a model still learns the effect's average."""
    p = np.clip(probabilities, EPSILON, 1 - EPSILON)
    logit, intercept = np.log(p) - np.log1p(-p), 0.0
    for _ in range(iterations):
        q = 1.0 / (1.0 + np.exp(-(logit + intercept)))
        curvature = float(np.sum(q * (1 - q)))
        if curvature <= 0:
            break
        intercept -= float(np.sum(q - labels)) / curvature
    return _bayes(labels, 1.0 / (1.0 + np.exp(-(logit + intercept))))["bayes_logloss"]


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
