"""Container images: the Dockerfile's cpu/gpu/tpu targets, Cloud Build config and the locks they install."""
