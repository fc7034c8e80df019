"""CPU examples/s of the default DCN config (adrank trainer path) vs a straightforward Keras DCN on the
same data: plain `Embedding` per feature, dense cross layers, default `compile`/`fit`.

    .venv/bin/python benchmarks/train.py [--examples DIR] [--steps N]
"""

from __future__ import annotations

import sys
from pathlib import Path

import keras

sys.path.insert(0, str(Path(__file__).resolve().parent))
from training_setup import examples_per_second, training_bench  # noqa: E402  (puts the repo on sys.path)

from components.preprocess.manifest import Manifest  # noqa: E402
from components.train.strategy import runtime_for  # noqa: E402
from components.train.task import compiled_model  # noqa: E402


def straightforward_dcn(manifest: Manifest, embedding_dim: int, cross_layers: int, deep_layers: list[int]):
    """The textbook functional-API DCN: one Embedding per feature, x_{l+1} = x0 * Dense(x_l) + x_l."""
    inputs, parts = {}, []
    for feature in manifest.features:
        if feature.kind == "numeric":
            inputs[feature.name] = keras.Input((), name=feature.name, dtype="float32")
            parts.append(keras.layers.Reshape((1,))(inputs[feature.name]))
            continue
        shape = (feature.length,) if feature.kind == "categorical_list" else ()
        inputs[feature.name] = keras.Input(shape, name=feature.name, dtype="int64")
        vectors = keras.layers.Embedding(feature.vocabulary_size, embedding_dim)(inputs[feature.name])
        if feature.kind == "categorical_list":
            vectors = keras.layers.GlobalAveragePooling1D()(vectors)
        parts.append(vectors)
    x0 = keras.layers.Concatenate()(parts)
    x = x0
    for _ in range(cross_layers):
        x = keras.layers.Add()([keras.layers.Multiply()([x0, keras.layers.Dense(x0.shape[-1])(x)]), x])
    for units in deep_layers:
        x = keras.layers.Dense(units, activation="relu")(x)
    outputs = {task: keras.layers.Dense(1, activation="sigmoid", name=task)(x) for task in manifest.tasks}
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss={task: "binary_crossentropy" for task in manifest.tasks})
    return model


def main() -> None:
    bench = training_bench(__doc__.splitlines()[0])
    resolved, manifest, batch, args = bench.resolved, bench.manifest, bench.batch, bench
    data = bench.real_dataset()
    sample = next(iter(data))[0]
    adrank = compiled_model(resolved, runtime_for("cpu"), manifest, sample, resolved.training.steps_per_execution)
    plain = straightforward_dcn(manifest, resolved.model.embedding_dim, resolved.model.cross_layers, resolved.model.deep_layers)
    results = {
        "adrank DCN": examples_per_second(adrank, data, args.steps, batch),
        "plain Keras DCN": examples_per_second(plain, data, args.steps, batch),
    }
    for name, value in results.items():
        print(f"{name:>16}: {value:,.0f} examples/s")
    print(f"ratio adrank/plain: {results['adrank DCN'] / results['plain Keras DCN']:.2f}")


if __name__ == "__main__":
    main()
