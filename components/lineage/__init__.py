"""What connects a pipeline run to the model version it registered (vertex backend only)."""
