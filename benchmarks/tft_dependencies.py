"""Which inputs a transform graph's outputs need, as features grow: tf.Transform's own `get_dependent_inputs` (one
output at a time, every input tested against each) against `components.preprocess.tft_dependencies.
dependent_inputs` (the outputs' sources once, each input tested once), on the same TF1 graph of one string input
and one hashed output per feature, the shape of a wide hashed config's transform graph. tf.Transform's `Transform`
DoFn asks this once per process before it applies the graph (the DirectRunner's one process; each Dataflow worker).

    PYTHONPATH=. .venv/bin/python benchmarks/tft_dependencies.py [--features 1000 2000 5000] [--repeats 3]

Prints, per width, the median seconds of each (the two alternated) and their ratio; both must give the same inputs
in the same order, or it stops.
"""

from __future__ import annotations

import argparse
import time
from statistics import median


def graph_of(features: int):
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        inputs = {f"f{i}": tf.compat.v1.placeholder(tf.string, [None], name=f"f{i}") for i in range(features)}
        outputs = [tf.strings.to_hash_bucket_fast(tensor, 1000) for tensor in inputs.values()]
    graph.finalize()
    return graph, inputs, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, nargs="+", default=[1000, 2000, 5000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from components.preprocess.tft_dependencies import _TFT_OWN, dependent_inputs

    print("which inputs the transform graph's outputs need (once per process that applies the graph), seconds, "
          f"median of {args.repeats}")
    for features in args.features:
        graph, inputs, outputs = graph_of(features)
        seconds: dict[str, list[float]] = {"tf.Transform's own": [], "one pass": []}
        for _ in range(args.repeats):
            found = {}
            for name, function in (("tf.Transform's own", _TFT_OWN), ("one pass", dependent_inputs)):
                started = time.perf_counter()
                found[name] = list(function(graph, inputs, outputs))
                seconds[name].append(time.perf_counter() - started)
            if found["one pass"] != found["tf.Transform's own"] or len(found["one pass"]) != features:
                raise SystemExit(f"{features} features: the two give different inputs")
        own, one = median(seconds["tf.Transform's own"]), median(seconds["one pass"])
        print(f"  {features:>6,} features: tf.Transform's own {own:7.2f} s   one pass {one:6.3f} s   "
              f"own / one pass {own / one:5.1f}x")


if __name__ == "__main__":
    main()
