"""CPU examples/s of the default DCN config (adrank trainer path) vs a straightforward Keras DCN on the
same data: plain `Embedding` per feature, dense cross layers, default `compile`/`fit`.

    .venv/bin/python benchmarks/train.py [--examples DIR] [--steps N]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_keras import plain_keras_dcn
from training_setup import examples_per_second, training_bench  # puts the repo on sys.path

from components.train.loop import compiled_model
from components.train.strategy import runtime_for


def main() -> None:
    bench = training_bench(__doc__.splitlines()[0])
    resolved, manifest, batch, args = bench.resolved, bench.manifest, bench.batch, bench
    data = bench.real_dataset()
    sample = next(iter(data))[0]
    adrank = compiled_model(resolved, runtime_for("cpu"), manifest, sample, resolved.training.steps_per_execution)
    plain = plain_keras_dcn(
        manifest, resolved.model.embedding_dim, resolved.model.cross_layers, resolved.model.deep_layers
    )
    results = {
        "adrank DCN": examples_per_second(adrank, data, args.steps, batch),
        "plain Keras DCN": examples_per_second(plain, data, args.steps, batch),
    }
    for name, value in results.items():
        print(f"{name:>16}: {value:,.0f} examples/s")
    print(f"ratio adrank/plain: {results['adrank DCN'] / results['plain Keras DCN']:.2f}")


if __name__ == "__main__":
    main()
