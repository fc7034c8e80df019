"""Stacked embedding tables: grouped lookups, shared tables, memory, placement, production table sizes."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from components.contracts.manifest import FeatureInfo, Manifest, SplitInfo
from components.train.embedding import FeatureEmbedding, TPUFeatureEmbedding
from components.train.embedding_tables import deserialize_embedding, feature_configs, serialize_embedding
from components.train.loop import compiled_model
from components.train.strategy import placement_rule, runtime_for
from components.train.table_placement import TablePlacement, partitioned_table, table_partitioner, table_shards
from configs import load_config
from configs.training import ModelConfig, TargetConfig, TrainingConfig, resolve_target

ROOT = Path(__file__).resolve().parents[3]


def manifest_of(*features: FeatureInfo, tasks=("engagement",)) -> Manifest:
    split = SplitInfo(examples=1024, label_rates={t: 0.1 for t in tasks}, file_pattern="train/*")
    return Manifest(tasks=list(tasks), features=list(features), splits={"train": split, "eval": split})


def categorical(name: str, rows: int, length: int = 1) -> FeatureInfo:
    if length > 1:
        return FeatureInfo(name=name, kind="categorical_list", dtype="int64", length=length, table_rows=rows,
                           combiner="mean")
    return FeatureInfo(name=name, kind="categorical", dtype="int64", table_rows=rows)


SMALL = manifest_of(categorical("user_id", 5), categorical("ad_id", 7), categorical("interests", 4, length=3),
                    FeatureInfo(name="bid", kind="numeric", dtype="float32"))


def test_features_of_one_dim_are_looked_up_in_one_stacked_table():
    layer = FeatureEmbedding(feature_configs(SMALL, embedding_dim=4, batch_size=2))
    assert [tuple(v.shape) for v in layer.trainable_variables] == [(16, 4)]
    table = layer.trainable_variables[0].numpy()
    inputs = {"user_id": tf.constant([1, 4]), "ad_id": tf.constant([0, 6]),
              "interests": tf.constant([[1, 3, 0], [0, 0, 0]])}
    out = {k: v.numpy() for k, v in layer(inputs).items()}
    np.testing.assert_allclose(out["user_id"], table[[1, 4]])
    np.testing.assert_allclose(out["ad_id"], table[[5 + 0, 5 + 6]])  # ad_id rows start after user_id's 5
    np.testing.assert_allclose(out["interests"][0], (table[12 + 1] + table[12 + 3]) / 2, rtol=1e-6)
    np.testing.assert_allclose(out["interests"][1], np.zeros(4))  # only padding


def test_one_training_step_updates_only_the_looked_up_rows_with_one_sparse_apply():
    config = load_config(None)
    resolved = resolve_target(config.model, config.training.model_copy(update={"global_batch_size": 2}),
                              TargetConfig(name="cpu"))
    features = {"user_id": tf.constant([1, 1]), "ad_id": tf.constant([0, 6]),
                "interests": tf.constant([[1, 3, 0], [0, 0, 0]]), "bid": tf.constant([0.5, -1.0])}
    model = compiled_model(resolved, runtime_for("cpu"), SMALL, features, steps_per_execution=1)
    (table,) = model.embedding.trainable_variables
    before = table.numpy()
    model.fit(tf.data.Dataset.from_tensors((features, {"engagement": tf.constant([1.0, 0.0])})), epochs=1, verbose=0)
    after = table.numpy()
    touched = {1, 5 + 0, 5 + 6, 12 + 1, 12 + 3}
    changed = {row for row in range(16) if not np.array_equal(before[row], after[row])}
    assert changed == touched
    assert int(model.embedding_optimizer.iterations.numpy()) == 1


def test_a_shared_table_serves_several_features_with_the_largest_vocabulary():
    configs = feature_configs(SMALL, 4, 2, shared_tables={"ids": ["user_id", "ad_id"]})
    assert configs["user_id"].table is configs["ad_id"].table
    assert configs["user_id"].table.vocabulary_size == 7
    layer = FeatureEmbedding(configs)
    assert [tuple(v.shape) for v in layer.trainable_variables] == [(7 + 4, 4)]
    out = layer({"user_id": tf.constant([3]), "ad_id": tf.constant([3]), "interests": tf.constant([[1, 0, 0]])})
    np.testing.assert_array_equal(out["user_id"].numpy(), out["ad_id"].numpy())


def test_a_shared_table_naming_an_unknown_feature_is_a_clear_error():
    with pytest.raises(ValueError, match=r"model.shared_tables\['ids'\] names 'item_id', which is not a categorical"):
        feature_configs(SMALL, 4, 2, shared_tables={"ids": ["user_id", "item_id"]})


def test_row_wise_adagrad_slot_memory_is_one_dim_th_of_the_table_and_lazy_adam_twice_it():
    def memory(optimizer: str) -> dict:
        resolved = resolve_target(
            ModelConfig(embedding_dim=8),
            TrainingConfig(global_batch_size=2, embedding_optimizer=optimizer),
            TargetConfig(name="cpu"),
        )
        features = {"user_id": tf.constant([1, 1]), "ad_id": tf.constant([0, 6]),
                    "interests": tf.constant([[1, 3, 0], [0, 0, 0]]), "bid": tf.constant([0.5, -1.0])}
        (table,) = compiled_model(resolved, runtime_for("cpu"), SMALL, features, 1).table_memory()
        return table

    rowwise, lazy_adam = memory("rowwise_adagrad"), memory("lazy_adam")
    assert rowwise["parameter_bytes"] == lazy_adam["parameter_bytes"] == 16 * 8 * 4
    assert rowwise["optimizer_slot_bytes"] == 16 * 4  # one float per row = table / dim
    assert lazy_adam["optimizer_slot_bytes"] == 2 * 16 * 8 * 4


def test_large_tables_go_to_host_memory_on_gpu_and_are_split_over_parameter_servers():
    training = TrainingConfig(host_table_bytes=1000, ps_table_shard_bytes=500)
    on_gpu = placement_rule(training, "GPU", ps_tasks=0)
    assert on_gpu.device_for(1001) == "/CPU:0" and on_gpu.device_for(1000) is None
    assert placement_rule(training, "CPU", ps_tasks=0).device_for(10**12) is None
    on_ps = placement_rule(training, "CPU", ps_tasks=2)
    assert on_ps.shards_for(501, rows=100) == 2 and on_ps.shards_for(500, rows=100) == 1
    assert placement_rule(training, "CPU", ps_tasks=1).shards_for(10**12, rows=100) == 1


def test_the_parameter_server_partitioner_splits_only_a_table_being_created_over_its_shard_bytes():
    # (the split itself, TensorFlow's ShardedVariable over two ps tasks: test_distributed's cpu-ps run)
    placement = TablePlacement(shards=2, shard_bytes=500)
    assert table_partitioner(tf.TensorShape([100, 8]), tf.float32) == [1, 1]  # a dense weight, or no table
    with partitioned_table(placement, table_bytes=100 * 8 * 4):
        assert table_partitioner(tf.TensorShape([100, 8]), tf.float32) == [2, 1]
    with partitioned_table(placement, table_bytes=400):
        assert table_partitioner(tf.TensorShape([100, 1]), tf.float32) == [1, 1]
    assert table_partitioner(tf.TensorShape([100, 8]), tf.float32) == [1, 1]  # the scope ended


def test_off_parameter_servers_a_table_over_the_shard_bytes_stays_one_variable():
    layer = FeatureEmbedding(feature_configs(SMALL, 4, 2), placement=TablePlacement(shards=2, shard_bytes=1))
    ((group, parts),) = layer.table_variables()
    assert [tuple(v.shape) for v in parts] == [(16, 4)] and table_shards(parts[0]) == parts


def test_vertex_yaml_table_sizes_build_and_train_a_few_steps_on_cpu():
    config = load_config(ROOT / "configs/vertex.yaml")
    rows = {f.name: (f.hash_buckets if f.encoding == "hash" else (f.top_k or 50) + f.oov_buckets)
            for f in config.features if f.kind == "categorical"}
    assert rows["user_id"] == 2_000_000 and rows["ad_id"] == 200_100
    features = [categorical(name, count) for name, count in rows.items()]
    features.append(categorical("user_interests", 5_002, length=16))
    features += [FeatureInfo(name=f.name, kind="numeric", dtype="float32") for f in config.features
                 if f.kind == "numeric"]
    manifest = manifest_of(*features, tasks=[t.name for t in config.tasks])
    resolved = resolve_target(config.model, config.training, TargetConfig(name="cpu", global_batch_size=32))
    rng = np.random.default_rng(0)
    batch = {f.name: (rng.normal(size=32).astype("float32") if f.kind == "numeric" else
                      rng.integers(1, f.table_rows, size=(32, f.length) if f.length > 1 else 32))
             for f in features}
    labels = {t: rng.integers(0, 2, 32).astype("float32") for t in manifest.tasks}
    model = compiled_model(resolved, runtime_for("cpu"), manifest, batch, steps_per_execution=1)
    (memory,) = model.table_memory()
    assert memory["rows"] == sum(rows.values()) + 5_002 and memory["embedding_dim"] == 32
    history = model.fit(tf.data.Dataset.from_tensors((batch, labels)).repeat(3), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][-1])
    assert int(model.optimizer.iterations.numpy()) == 3


@pytest.mark.parametrize("implementation", [FeatureEmbedding, TPUFeatureEmbedding])
def test_either_embedding_looks_up_its_table_rows_and_round_trips_config_and_tables(implementation):
    layer = implementation(feature_configs(SMALL, embedding_dim=4, batch_size=2), name="embedding")
    inputs = {"user_id": tf.constant([1, 4]), "ad_id": tf.constant([0, 6]),
              "interests": tf.constant([[1, 3, 0], [2, 0, 0]])}
    block = layer.concatenated(inputs).numpy()
    assert block.shape == (2, 3 * 4)
    tables = layer.table_values()
    assert {name: t.shape for name, t in tables.items()} == {
        "user_id_table": (5, 4), "ad_id_table": (7, 4), "interests_table": (4, 4)}
    out = layer(inputs)
    np.testing.assert_allclose(out["user_id"].numpy(), tables["user_id_table"][[1, 4]], rtol=1e-6)
    np.testing.assert_allclose(out["interests"].numpy()[0], tables["interests_table"][[1, 3]].mean(0), rtol=1e-6)

    copy = deserialize_embedding(serialize_embedding(layer))
    assert type(copy) is implementation and list(copy.feature_configs) == ["user_id", "ad_id", "interests"]
    copy.concatenated(inputs)
    copy.assign_tables(tables)
    np.testing.assert_allclose(copy.concatenated(inputs).numpy(), block, rtol=1e-6)
