from components.train.run_evaluation import PREDICTION_BATCH_FLOOR, prediction_batch_size
from configs.training import TrainingConfig


def test_prediction_batch_is_the_training_batch_but_never_below_the_floor():
    assert PREDICTION_BATCH_FLOOR == 1024
    assert prediction_batch_size(TrainingConfig(global_batch_size=64)) == 1024
    assert prediction_batch_size(TrainingConfig(global_batch_size=1024)) == 1024
    assert prediction_batch_size(TrainingConfig(global_batch_size=4096)) == 4096
