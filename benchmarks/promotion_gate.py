"""The promotion gate on install-rate logs: a challenger 1% worse than the champion, and one 1% better, judged by the
relative tolerance (the default) and by the old absolute 0.001 nats, day by day over the `low_rate` preset.

    .venv/bin/python benchmarks/promotion_gate.py [--days 3] [--impressions-per-day 25000] [--config FILE]

What it does, and what is real:
- the logs are the `low_rate` preset's synthetic install logs (about 0.2% positives, a base rate that drifts),
  generated for `lookback + days` days; each replayed day's eval examples are that day's impressions, labelled by
  the project's own attribution rule (`components.preprocess.attribution.attribute`, install within the task's window);
- the champion is a real, simple model fitted on the lookback days before the eval day: a smoothed per-ad
  install rate backed off to the advertiser's and then the global rate (no TensorFlow, so the figures come in
  seconds, not a training run per day);
- the challengers are derived from the champion's predictions with a controlled log-loss shift: a blur of the
  logit toward the mean, sigmoid(a·logit(p) + (1 − a)·mean), with `a` solved on the day's eval examples so the
  challenger's log-loss is exactly 1.01 × the champion's ("1% worse"); for "1% better" the roles swap: the real
  model is the challenger against a blurred champion whose log-loss is the model's / 0.99;
- the decision is the project's: streamed paired statistics (`components.registry.scoring.PairedAccumulator`,
  batches of `promotion.scoring_batch_size`), the paired bootstrap-t interval
  (`components.registry.paired_bootstrap`) and the rule (`components.registry.promotion_rule.judge`, which weighs
  `promotion.min_eval_positives`) under the preset's promotion config (relative 0.001 by default) and under
  `promotion.logloss_tolerance: 0.001`; `--set promotion.min_eval_positives=1` shows the interval alone deciding.

Prints per day and case: eval examples and positives, the champion's log-loss, the paired difference relative to
the champion with the upper end of its 95% CI, and the decision under each tolerance.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import glob
import gzip
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

from components.logs.records import parse_timestamp  # noqa: E402
from components.logs.synthetic import ENGAGEMENTS_DIR, IMPRESSIONS_DIR, generate_logs  # noqa: E402
from components.preprocess.attribution import EventTask, attribute  # noqa: E402
from components.preprocess.parse import TIMESTAMP_MS  # noqa: E402
from components.registry.paired_bootstrap import PairedBootstrap  # noqa: E402
from components.registry.promotion_rule import judge  # noqa: E402
from components.registry.scoring import PairedAccumulator, per_example_logloss  # noqa: E402
from configs import load_config  # noqa: E402
from configs.promotion import PromotionConfig  # noqa: E402
from configs.slices import PreprocessStepConfig  # noqa: E402

DAY_MS = 86_400_000
PRIOR_STRENGTH = 200.0  # pseudo-impressions of the back-off rate in each smoothed rate


def _lines(directory: Path) -> list[str]:
    lines: list[str] = []
    for path in sorted(glob.glob(str(directory / "*"))):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as stream:
            lines += stream.read().splitlines()
    return lines


def _records(lines: list[str]) -> list[dict]:
    """Well-formed JSON records with a parseable timestamp (the preset injects no malformed lines by default)."""
    records = []
    for line in lines:
        try:
            record = json.loads(line)
            record[TIMESTAMP_MS] = parse_timestamp(record["timestamp"])
        except (ValueError, KeyError, TypeError):
            continue
        records.append(record)
    return records


def labelled_impressions(logs_dir: Path, task: EventTask) -> list[dict]:
    """Every impression with its label, by the project's attribution rule."""
    events_by_impression: dict[str, list[dict]] = defaultdict(list)
    for event in _records(_lines(logs_dir / ENGAGEMENTS_DIR)):
        events_by_impression[event["impression_id"]].append(event)
    examples = []
    for impression in _records(_lines(logs_dir / IMPRESSIONS_DIR)):
        example, _ = attribute([impression], events_by_impression.get(impression["impression_id"], []), (task,))
        if example is not None:
            examples.append(example)
    return examples


class SmoothedRateModel:
    """P(install | ad) = (installs_ad + k·P(advertiser)) / (impressions_ad + k), P(advertiser) backed off to the
    global rate the same way: a real if simple conversion-rate model."""

    def __init__(self, train: list[dict], label: str):
        labels = np.array([example[label] for example in train])
        self.global_rate = float(labels.mean())
        self.advertiser = self._smoothed(train, labels, "advertiser_id", lambda _: self.global_rate)
        self.ad = self._smoothed(train, labels, "ad_id", lambda example: self._advertiser_rate(example))
        self.ad_advertiser = {example["ad_id"]: example["advertiser_id"] for example in train}

    @staticmethod
    def _smoothed(train: list[dict], labels: np.ndarray, key: str, prior) -> dict[str, float]:
        shows: dict[str, float] = defaultdict(float)
        hits: dict[str, float] = defaultdict(float)
        priors: dict[str, float] = {}
        for example, label in zip(train, labels):
            shows[example[key]] += 1
            hits[example[key]] += label
            priors.setdefault(example[key], prior(example))
        return {name: (hits[name] + PRIOR_STRENGTH * priors[name]) / (shows[name] + PRIOR_STRENGTH) for name in shows}

    def _advertiser_rate(self, example: dict) -> float:
        return self.advertiser.get(example["advertiser_id"], self.global_rate)

    def predict(self, examples: list[dict]) -> np.ndarray:
        return np.array([self.ad.get(example["ad_id"], self._advertiser_rate(example)) for example in examples])


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def blurred(p: np.ndarray, slope: float) -> np.ndarray:
    z = _logit(p)
    return 1 / (1 + np.exp(-(slope * z + (1 - slope) * z.mean())))


def blur_to(p: np.ndarray, labels: np.ndarray, logloss: float) -> np.ndarray:
    """The blur of `p` whose log-loss on `labels` is `logloss` (above p's own)."""
    slope = brentq(lambda a: per_example_logloss(labels, blurred(p, a)).mean() - logloss, 0.0, 1.0)
    return blurred(p, slope)


def decide(challenger: np.ndarray, champion: np.ndarray, labels: np.ndarray, promotion: PromotionConfig):
    """The promotion step's figures and rule on prediction vectors: means streamed batch by batch, the 95% interval
    from the paired bootstrap-t, the eval positives weighed (`promotion.min_eval_positives`)."""
    accumulator, bootstrap = PairedAccumulator(), PairedBootstrap()
    for start in range(0, labels.size, promotion.scoring_batch_size):
        window = slice(start, start + promotion.scoring_batch_size)
        challenger_losses = per_example_logloss(labels[window], challenger[window])
        champion_losses = per_example_logloss(labels[window], champion[window])
        accumulator.add(challenger_losses, champion_losses)
        bootstrap.add(challenger_losses - champion_losses, labels[window])
    comparison = dataclasses.replace(accumulator.comparison(),
                                     difference_ci95=bootstrap.interval(promotion.bootstrap_resamples))
    return comparison, judge(comparison, None, promotion, bootstrap.positives.count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs/examples/low_rate.yaml"))
    parser.add_argument("--days", type=int, default=3, help="eval days replayed")
    parser.add_argument("--lookback", type=int, default=3, help="days of logs the champion is fitted on")
    parser.add_argument("--impressions-per-day", type=int, default=None, help="default: the preset's")
    parser.add_argument("--what-if", type=float, nargs="*", default=[0.01],
                        help="other relative tolerances to show beside the config's")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    overrides = [f"logs.synthetic.days={args.lookback + args.days}", *args.overrides]
    if args.impressions_per_day:
        overrides.append(f"logs.synthetic.impressions_per_day={args.impressions_per_day}")
    config = load_config(args.config, overrides)
    relative = config.promotion
    rules = {
        f"rel. {relative.logloss_tolerance_relative:g}": relative,
        **{f"rel. {value:g}": load_config(args.config, [*overrides, f"promotion.logloss_tolerance_relative={value}"])
           .promotion for value in args.what_if if value != relative.logloss_tolerance_relative},
        "abs. 0.001": load_config(args.config, [*overrides, "promotion.logloss_tolerance=0.001"]).promotion,
    }
    task_config = config.tasks[0]
    assert task_config.event_type is not None
    task = EventTask(f"label_{task_config.name}", task_config.event_type,
                     task_config.attribution_window_seconds * 1000)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="adrank-gate-bench-") as work:
        logs_dir = Path(work) / "logs"
        generate_logs(PreprocessStepConfig.of(config), logs_dir)
        examples = labelled_impressions(logs_dir, task)
    first_day = config.logs.synthetic.start_date
    by_day: dict[int, list[dict]] = defaultdict(list)
    start_ms = int(dt.datetime(first_day.year, first_day.month, first_day.day, tzinfo=dt.timezone.utc).timestamp()
                   * 1000)
    for example in examples:
        by_day[(example[TIMESTAMP_MS] - start_ms) // DAY_MS].append(example)
    print(f"{config.name}: {len(examples):,} labelled impressions over {args.lookback + args.days} days "
          f"({time.perf_counter() - started:.0f} s to generate and label); champion: smoothed per-ad rate fitted on "
          f"the {args.lookback} days before each eval day; tolerances: relative (× the champion's log-loss on the "
          f"same examples; the config's first) and absolute (nats)")
    header = (f"{'day':>3} {'eval date':>10} {'examples':>9} {'pos':>5} {'champion':>9} {'case':>10} "
              f"{'Δ/champion':>10} {'CI top/ch.':>10} {'abs. CI top':>11} " + " ".join(f"{name:>10}" for name in rules))
    print(header)
    summary: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for offset in range(args.days):
        eval_day = args.lookback + offset
        train = [e for day in range(eval_day - args.lookback, eval_day) for e in by_day[day]]
        evaluation = by_day[eval_day]
        labels = np.array([example[task.label] for example in evaluation], dtype=np.float64)
        model = SmoothedRateModel(train, task.label).predict(evaluation)
        model_logloss = float(per_example_logloss(labels, model).mean())
        cases = {
            "1% worse": (blur_to(model, labels, 1.01 * model_logloss), model),
            "1% better": (model, blur_to(model, labels, model_logloss / 0.99)),
        }
        for case, (challenger, champion) in cases.items():
            outcomes = []
            for name, promotion in rules.items():
                comparison, verdict = decide(challenger, champion, labels, promotion)
                summary[(case, name)].append(verdict.promoted)
                outcomes.append("promoted" if verdict.promoted else "refused")
            share = comparison.difference / comparison.champion_logloss
            top = comparison.difference_ci95[1]
            date = first_day + dt.timedelta(days=eval_day)
            print(f"{offset + 1:>3} {date:%Y-%m-%d} {labels.size:>9,} {int(labels.sum()):>5} "
                  f"{comparison.champion_logloss:9.5f} {case:>10} {share:>+10.2%} "
                  f"{top / comparison.champion_logloss:>+10.2%} {top:>+11.6f} "
                  + " ".join(f"{outcome:>10}" for outcome in outcomes))
    for (case, name), decisions in sorted(summary.items()):
        print(f"{case:>10} challenger, tolerance {name:>10}: promoted on {sum(decisions)} of {len(decisions)} days")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
