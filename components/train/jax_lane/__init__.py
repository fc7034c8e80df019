"""The JAX training lane: the same Keras 3 ranking models, trained by a jitted step under `KERAS_BACKEND=jax`, with no
TensorFlow in the process (so it runs where TensorFlow cannot: a GPU machine with only JAX, the JAX TPU images).

    blocks + manifest ─► block_reader (numpy: memmapped, fingerprint- and manifest-checked, seeded order per epoch,
                         batches prepared on a thread) ─► step (jitted: `steps_per_execution` steps per call, the
                         dense weights by the Keras optimizer's stateless apply, the tables' touched rows by
                         sparse_updates) ─► trainer (chunks, checkpoints, per-epoch evaluation, the time split)
                         ─► weights for the TensorFlow export step (one SavedModel whatever the lane)

Tables are `embedding.SparseRowTables` (stacked like the TensorFlow lane's, the gradient taken with respect to the
rows a batch gathered, never the whole table), or keras-rs `DistributedEmbedding` on SparseCore where the TPU has
it (`embedding.SparseCoreTables`).
"""
