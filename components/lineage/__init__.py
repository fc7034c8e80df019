"""What connects a pipeline run to what it read and registered: the day its window holds (`run_day`), and on Vertex
the model version it registered, with its labels and aliases (`model_version`)."""
