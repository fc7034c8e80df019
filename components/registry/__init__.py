"""The model registry step: register the best run's model and decide whether it becomes the default."""
