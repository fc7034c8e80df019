"""The pipeline run's place in its Vertex Experiment (vertex backend only)."""
