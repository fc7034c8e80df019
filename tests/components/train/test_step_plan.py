import pytest

from components.train.step_plan import (
    StepPlan,
    chunks_per_epoch_for,
    epochs_for_split,
    min_train_steps,
    steps_per_execution_for,
)
from configs.training import MAX_RAISED_EPOCHS, TrainingConfig


def test_steps_per_execution_divides_the_chunk_so_no_step_is_dropped():
    assert steps_per_execution_for(15, 8) == 5
    assert steps_per_execution_for(87, 8) == 3  # 87 = 3 · 29: 3 steps per execution, none dropped
    assert steps_per_execution_for(279, 8) == 3  # the reported case: 8 dropped 7 steps of 279 every epoch
    assert steps_per_execution_for(64, 8) == 8
    assert steps_per_execution_for(3, 8) == 3


def test_a_prime_chunk_keeps_speed_and_drops_at_most_five_percent():
    assert steps_per_execution_for(89, 8) == 8  # only 1 divides 89: 8 per execution, 1 step dropped
    assert steps_per_execution_for(89, 2) == 1  # with 2 configured, 1 costs little speed and drops nothing


@pytest.mark.parametrize("examples, batch", [(71_424, 256), (8000, 512), (45_000, 512), (179_690, 512), (60_000, 96)])
def test_step_plan_trains_every_full_batch_of_each_epoch(examples, batch):
    plan = StepPlan(examples, TrainingConfig(global_batch_size=batch, epochs=3, steps_per_execution=8))
    assert plan.steps_per_epoch == examples // batch
    assert plan.dropped_steps == 0
    assert plan.total_steps == 3 * plan.steps_per_epoch
    assert plan.chunk_steps % plan.steps_per_execution == 0


def test_step_plan_reports_the_steps_it_cannot_fit():
    plan = StepPlan(89 * 512, TrainingConfig(global_batch_size=512, epochs=2, steps_per_execution=8))
    assert (plan.steps_per_epoch, plan.steps_per_execution) == (89, 8)
    assert plan.dropped_steps_per_epoch == 1 and plan.dropped_steps == 2
    assert plan.total_steps + plan.dropped_steps == 2 * 89


def test_checkpoints_per_epoch_split_the_epoch_evenly_and_mark_epoch_ends():
    assert chunks_per_epoch_for(279, 2) == 3  # 279 = 3 · 93: 3 chunks, not 2 that drop a step
    assert chunks_per_epoch_for(100, 3) == 4
    plan = StepPlan(279 * 256, TrainingConfig(global_batch_size=256, epochs=2, checkpoints_per_epoch=2))
    assert plan.chunks_per_epoch == 3 and plan.chunks == 6 and plan.dropped_steps == 0
    assert [plan.ends_epoch(chunk) for chunk in range(plan.chunks)] == [False, False, True, False, False, True]


def test_a_small_split_trains_at_least_the_square_root_of_its_examples_in_steps_and_a_large_one_its_epochs():
    training = TrainingConfig(global_batch_size=512, epochs=2)  # min_train_steps: sqrt by default
    assert min_train_steps(7_472, training) == 87 and min_train_steps(10_000, training) == 100
    assert epochs_for_split(2_256, training) == 12  # 4 steps an epoch: 12 epochs reach 48 steps
    assert epochs_for_split(7_472, training) == 7  # 14 steps an epoch, 87 steps
    assert epochs_for_split(18_770, training) == 4  # 36 steps an epoch, 138 steps
    assert epochs_for_split(180_000, training) == 2  # 351 steps an epoch: as set
    assert epochs_for_split(600, TrainingConfig(global_batch_size=512)) == 25  # 1 step an epoch, 25 steps
    assert epochs_for_split(9_000, TrainingConfig(global_batch_size=8_192)) == MAX_RAISED_EPOCHS  # capped
    assert epochs_for_split(7_472, training.model_copy(update={"min_train_steps": 0})) == 2  # the rule off
    assert epochs_for_split(7_472, training.model_copy(update={"min_train_steps": 300})) == 22  # a number of steps
    assert epochs_for_split(7_472, training.model_copy(update={"epochs": 12})) == 12  # never lowered
    assert StepPlan(7_472, training.model_copy(update={"epochs": epochs_for_split(7_472, training)})).total_steps >= 87


def test_min_train_steps_is_sqrt_or_a_number_of_steps():
    for bad in (-1, 10**10, "log"):
        with pytest.raises(ValueError, match="min_train_steps"):
            TrainingConfig(min_train_steps=bad)
