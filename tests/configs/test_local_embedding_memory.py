"""A local run holds embedding tables to the machine's memory unless the config sets the limit itself."""

import pytest

from configs import load_config
from configs.embedding_memory import (
    LOCAL_MEMORY_SHARE,
    check_local_embedding_memory,
    estimate_embedding_memory,
    local_memory_limit_gb,
    machine_memory_gib,
)
from configs.training import resolve_target

# hash_buckets 20M × dim 16 × 4 B × (1 + 2 Adam slots) ≈ 3.6 GiB, under the 16 GiB schema default
BIG_TABLE = ["features.0.hash_buckets=20000000", "model.embedding_dim=16", "training.embedding_optimizer=lazy_adam"]


def test_the_local_default_is_a_share_of_this_machines_memory():
    assert machine_memory_gib() > 0
    assert local_memory_limit_gb(8.0) == 8.0 * LOCAL_MEMORY_SHARE


def test_a_table_too_big_for_a_small_machine_is_refused_naming_the_machine():
    config = load_config(overrides=BIG_TABLE)
    resolved = resolve_target(config.model, config.training, config.targets[0])
    assert 2.0 < estimate_embedding_memory(config.features, resolved.model, resolved.training).gib < 16
    with pytest.raises(ValueError, match=(
        r"training\.max_embedding_memory_gb: target 'cpu' needs about 3\.\d GiB .* over the limit of 2 GiB "
        r"\(this machine's 4\.0 GiB × 0\.5, the default for a local run\); largest table: user_id"
    )):
        check_local_embedding_memory(config, memory_gib=4.0)
    check_local_embedding_memory(config, memory_gib=64.0)


@pytest.mark.parametrize("explicit", [
    ["training.max_embedding_memory_gb=8"],
    # configs/local.yaml has five targets (cpu, cpu-jax, cpu-ps, gpu, tpu-v5e): each target's own limit
    [f"targets.{i}.training.max_embedding_memory_gb=8" for i in range(5)],
])
def test_a_limit_the_config_sets_is_kept(explicit):
    check_local_embedding_memory(load_config(overrides=[*BIG_TABLE, *explicit]), memory_gib=4.0)
