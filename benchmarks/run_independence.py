"""Do repeated runs stay independent when the trainer reads blocks? On the same examples, written both as blocks and
as per-example tf.Examples:

  - Spearman rank correlation of the example order between two seeds, and between two epochs of one seed, mean ±
    std over `--pairs` pairs (0: unrelated orders; today's per-example path, with a shuffle buffer over the whole
    split, is the reference). With `training.shuffle_buffer` over the whole split (as here) the block reader draws
    one permutation of all the split's examples per epoch, so both paths should spread like a random order of
    examples (about 1/√examples);
  - the spread (std) of the eval log-loss of `--runs` training runs (seeds 0..runs-1) per path, and its ratio.

    .venv/bin/python benchmarks/run_independence.py [--train 8192] [--runs 5] [--epochs 2] [--pairs 6]

(`--runs 0`: the order correlations only.)

The runs train the default model at batch 256 on the trainer tests' synthetic examples (tests/components/train).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests/components/train"))

from config_fixture import small_config  # noqa: E402
from fixture_data import write_transformed_examples  # noqa: E402

from components.contracts.manifest import Manifest  # noqa: E402
from components.train.input import InputOptions, block_dataset, example_dataset  # noqa: E402
from components.train.training_run import train  # noqa: E402

BATCH = 256


def order(read, directory: str, manifest: Manifest, seed: int, train: int, epochs: int) -> list[list[float]]:
    """The bids (unique per example) in the order one run reads them, per epoch."""
    options = InputOptions(batch_size=BATCH, training=True, seed=seed, shuffle_buffer=train, repeat=True)
    bids = [float(b) for features, _ in read(directory, manifest, "train", options).take(epochs * (train // BATCH))
            for b in features["ad_bid"].numpy()]
    per_epoch = (train // BATCH) * BATCH
    return [bids[e * per_epoch:(e + 1) * per_epoch] for e in range(epochs)]


def spearman(first: list[float], second: list[float]) -> float:
    """Rank correlation of the positions of the examples both orders contain."""
    position = {b: i for i, b in enumerate(second)}
    shared = [(i, position[b]) for i, b in enumerate(first) if b in position]
    a, b = (np.argsort(np.argsort(np.array(side, float))) for side in zip(*shared))
    return float(np.corrcoef(a, b)[0, 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=6, help="seed pairs (and epoch pairs) the correlation is over")
    parser.add_argument("--block-examples", type=int, default=512)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="adrank-independence-"))
    paths = {"tf.Example": (example_dataset, work / "examples"), "blocks": (block_dataset, work / "blocks")}
    for name, (_, directory) in paths.items():  # the same seed: the same examples in both directories
        write_transformed_examples(directory, train=args.train, eval=2048, shards=4, seed=0,
                                   block_examples=args.block_examples if name == "blocks" else 0)
    print(f"{args.train:,} train examples, batch {BATCH}, blocks of {args.block_examples}; Spearman rank correlation "
          "of example order (0 = unrelated)")
    for name, (read, directory) in paths.items():
        manifest = Manifest.read(directory)
        seeds, epochs = [], []
        for pair in range(args.pairs):  # seeds 2p+1 and 2p+2; epochs 1 and 2 of seed 2p+1
            one = order(read, str(directory), manifest, 2 * pair + 1, args.train, 2)
            other = order(read, str(directory), manifest, 2 * pair + 2, args.train, 1)
            seeds.append(spearman(one[0], other[0]))
            epochs.append(spearman(one[0], one[1]))
        print(f"{name:>10}: seed vs seed {statistics.mean(seeds):+.3f} ± {statistics.stdev(seeds):.3f} "
              f"(max |r| {max(map(abs, seeds)):.3f})   epoch 1 vs epoch 2 {statistics.mean(epochs):+.3f} ± "
              f"{statistics.stdev(epochs):.3f} (max |r| {max(map(abs, epochs)):.3f})   over {args.pairs} pairs",
              flush=True)
    if args.runs < 2:
        return
    config = small_config(epochs=args.epochs, global_batch_size=BATCH, input_capacity_seconds=0.0)
    spread = {}
    for name, (_, directory) in paths.items():
        losses = []
        for run in range(args.runs):
            summary = train(config, "cpu", run, str(directory), str(work / f"model-{name}-{run}"))
            losses.append(summary.metrics["engagement"].logloss)
        spread[name] = statistics.stdev(losses)
        print(f"{name:>10}: eval log-loss over {args.runs} runs mean {statistics.mean(losses):.5f} "
              f"std {spread[name]:.5f}  ({', '.join(f'{v:.5f}' for v in losses)})", flush=True)
    print(f"spread blocks / tf.Example: {spread['blocks'] / spread['tf.Example']:.2f} (below 1 would mean the block "
          "order makes runs more alike)")


if __name__ == "__main__":
    main()
