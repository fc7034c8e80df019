from components.train.task import StepPlan, steps_per_execution_for
from configs.training import TrainingConfig


def test_steps_per_execution_never_drops_much_of_an_epoch():
    assert steps_per_execution_for(15, 8) == 5
    assert steps_per_execution_for(87, 8) == 7
    assert steps_per_execution_for(64, 8) == 8
    assert steps_per_execution_for(3, 8) == 3


def test_step_plan_covers_every_full_batch_of_each_epoch():
    plan = StepPlan(8000, TrainingConfig(global_batch_size=512, epochs=3, steps_per_execution=8))
    assert plan.steps_per_epoch == 15
    assert plan.total_steps == 45
    assert plan.chunk_steps % plan.steps_per_execution == 0
