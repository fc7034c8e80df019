"""The JAX lane's jitted training step over a ranking model's stateless call.

    one step(state, ints [B, W_int], floats [B, W_float]):
        features = the model's packed split; ids = the tables' lookup ids; rows = the tables' rows at ids
        loss, (∂/∂dense, ∂/∂rows) = value_and_grad(Σ_tasks BCE(label, model(rows given)))
        dense weights ← the Keras optimizer's stateless apply (its warm-up schedule, its global-norm clipping)
        tables       ← sparse_updates.apply on the touched rows (the tables' warmed-up rate, their own clipping)

An execution is `steps_per_execution` steps in one call (`lax.scan` over [K, B, W] batches), with the state donated
so the tables are updated in place. The step's loss sum and count and a non-finite marker stay on the device; the
trainer reads them at execution or chunk boundaries, never per step. With several devices the batch axis is sharded
over them (`data_sharding`) and the state replicated: XLA inserts the all-reduces (synchronous data parallelism).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import keras
import numpy as np

from components.train.jax_lane import sparse_updates
from components.train.jax_lane.embedding import SparseRowTables
from components.train.models.base import RankingModel
from components.train.packed_batch import PACKED_FLOAT32, PACKED_INT64, PackedColumns
from configs.training import TrainingConfig


@jax.tree_util.register_dataclass
@dataclass
class TrainState:
    """Everything a step reads and writes, as device arrays (a pytree, donated to each execution).

    `non_trainable` holds the tables (at `TablePositions`); `table_slots` each table's optimizer slots; `loss_sum`,
    `loss_steps` and `nonfinite_step` (−1: none yet) the steps since the trainer last read them."""

    trainable: list
    non_trainable: list
    optimizer: list
    table_slots: list
    step: Any
    loss_sum: Any
    loss_steps: Any
    nonfinite_step: Any


@dataclass(frozen=True)
class LabelColumns:
    """task → (dtype of the packed matrix holding its label, column)."""

    columns: dict[str, tuple[str, int]]

    def labels(self, ints: Any, floats: Any) -> dict[str, Any]:
        matrices = {"int64": ints, "float32": floats}
        return {task: matrices[dtype][:, column:column + 1].astype(jnp.float32)
                for task, (dtype, column) in self.columns.items()}


@dataclass
class TrainStep:
    """The jitted execution for one model: `run(state, ints [K, B, W_int], floats [K, B, W_float]) -> state`."""

    model: RankingModel
    optimizer: keras.optimizers.Optimizer
    training: TrainingConfig
    labels: LabelColumns
    embedding_learning_rate: Any  # step → rate (the dense optimizer's schedule, at the tables' peak)
    table_positions: list[int] = field(default_factory=list)

    def __post_init__(self):
        tables = self.model.embedding
        self.sparse_rows = isinstance(tables, SparseRowTables)
        if self.sparse_rows:
            positions = {id(v): i for i, v in enumerate(self.model.non_trainable_variables)}
            self.table_positions = [positions[id(v)] for v in tables.group_tables]
        elif not hasattr(tables, "host_preprocess"):
            raise TypeError(f"the JAX step trains SparseRowTables or tables formatted on the host (SparseCore), not "
                            f"{type(tables).__name__}")
        self._loss = keras.losses.BinaryCrossentropy()
        self.run = jax.jit(self._execution, donate_argnums=(0,))

    # -- state ------------------------------------------------------------------------------------------------
    def initial_state(self) -> TrainState:
        """The model's and optimizers' current values as a fresh state (the optimizer built over the dense weights)."""
        if not self.optimizer.built:
            self.optimizer.build(self.model.trainable_variables)
        tables = self.model.embedding
        slots = [[jnp.asarray(s) for s in sparse_updates.init_slots(self.training.embedding_optimizer,
                                                                     (group.rows, group.embedding_dim))]
                 for group in tables.groups] if self.sparse_rows else []
        return TrainState(
            trainable=[v.value for v in self.model.trainable_variables],
            non_trainable=[v.value for v in self.model.non_trainable_variables],
            optimizer=[v.value for v in self.optimizer.variables],
            table_slots=slots,
            step=jnp.asarray(0, jnp.int32),
            loss_sum=jnp.asarray(0.0, jnp.float32),
            loss_steps=jnp.asarray(0, jnp.int32),
            nonfinite_step=jnp.asarray(-1, jnp.int32),
        )

    def write_back(self, state: TrainState) -> None:
        """The state's values into the model's and optimizer's variables (for prediction, warm-start state, export)."""
        for variable, value in zip(self.model.trainable_variables, state.trainable):
            variable.assign(value)
        for variable, value in zip(self.model.non_trainable_variables, state.non_trainable):
            variable.assign(value)
        for variable, value in zip(self.optimizer.variables, state.optimizer):
            variable.assign(value)

    # -- one step, one execution ------------------------------------------------------------------------------
    def host_inputs(self, ints: np.ndarray) -> Any:
        """For tables formatted on the host (SparseCore): an execution's ids [K, B, W_int] formatted step by step and
        stacked along K (run on the reader's thread); None for sparse-row tables."""
        if self.sparse_rows:
            return None
        if self.model.packed_layout is None:
            raise ValueError("a model built without a block layout cannot take host-formatted batches")
        layout = self.model.packed_layout.int64
        steps = [self.model.embedding.host_preprocess(numpy_ids(layout, ints[k])) for k in range(ints.shape[0])]
        return jax.tree_util.tree_map(lambda *parts: np.stack(parts), *steps)

    def _one_step(self, state: TrainState, batch: tuple) -> tuple[TrainState, None]:
        if not self.sparse_rows:
            return self._one_step_host_formatted(state, batch)
        ints, floats = batch
        x = {PACKED_INT64: ints, PACKED_FLOAT32: floats}
        y = self.labels.labels(ints, floats)
        tables: SparseRowTables = self.model.embedding
        ids = tables.lookup_ids(self.model.features(x))
        table_arrays = [state.non_trainable[p] for p in self.table_positions]
        rows = tables.gather(table_arrays, ids)

        def loss_of(trainable, rows):
            with tables.rows_given(rows):
                predictions, non_trainable = self.model.stateless_call(trainable, state.non_trainable, x,
                                                                       training=True)
            loss = sum(self._loss(y[task], predictions[task]) for task in self.model.tasks)
            return loss, non_trainable

        (loss, non_trainable), (dense_gradients, row_gradients) = jax.value_and_grad(
            loss_of, argnums=(0, 1), has_aux=True)(state.trainable, rows)
        trainable, optimizer_values = self.optimizer.stateless_apply(state.optimizer, dense_gradients,
                                                                     state.trainable)
        summed = [sparse_updates.sum_rows(group_ids, gradient, group.rows)
                  for group_ids, gradient, group in zip(ids, row_gradients, tables.groups)]
        scale = sparse_updates.clip_scale(summed, self.training.gradient_clip_norm)
        rate = self.embedding_learning_rate(state.step)
        non_trainable = list(non_trainable)
        slots = []
        for position, table, group_slots, rows_summed in zip(self.table_positions, table_arrays, state.table_slots,
                                                             summed):
            table, group_slots = sparse_updates.apply(self.training.embedding_optimizer, table, group_slots,
                                                      rows_summed, rate, state.step, scale)
            non_trainable[position] = table
            slots.append(group_slots)
        gradient_norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(dense_gradients))
                                 + sum(sparse_updates.squared_norm(s) for s in summed))
        finite = jnp.isfinite(loss) & jnp.isfinite(gradient_norm)
        nonfinite_step = jnp.where((state.nonfinite_step < 0) & ~finite, state.step + 1, state.nonfinite_step)
        return TrainState(
            trainable=trainable, non_trainable=non_trainable, optimizer=optimizer_values, table_slots=slots,
            step=state.step + 1, loss_sum=state.loss_sum + loss.astype(jnp.float32), loss_steps=state.loss_steps + 1,
            nonfinite_step=nonfinite_step,
        ), None

    def _one_step_host_formatted(self, state: TrainState, batch: tuple) -> tuple[TrainState, None]:
        """A step whose tables are trainable variables the embedding API updates itself (SparseCore): its custom
        gradient writes each table's new value, which the optimizer's stateless apply assigns
        (`overwrite_with_gradient`)."""
        ints, floats, preprocessed = batch
        x = {PACKED_INT64: ints, PACKED_FLOAT32: floats}
        y = self.labels.labels(ints, floats)
        tables = self.model.embedding

        def loss_of(trainable):
            with tables.inputs_given(preprocessed):
                predictions, non_trainable = self.model.stateless_call(trainable, state.non_trainable, x,
                                                                       training=True)
            return sum(self._loss(y[task], predictions[task]) for task in self.model.tasks), non_trainable

        (loss, non_trainable), gradients = jax.value_and_grad(loss_of, has_aux=True)(state.trainable)
        trainable, optimizer_values = self.optimizer.stateless_apply(state.optimizer, gradients, state.trainable)
        finite = jnp.isfinite(loss)
        nonfinite_step = jnp.where((state.nonfinite_step < 0) & ~finite, state.step + 1, state.nonfinite_step)
        return TrainState(
            trainable=trainable, non_trainable=list(non_trainable), optimizer=optimizer_values, table_slots=[],
            step=state.step + 1, loss_sum=state.loss_sum + loss.astype(jnp.float32), loss_steps=state.loss_steps + 1,
            nonfinite_step=nonfinite_step,
        ), None

    def _execution(self, state: TrainState, ints: Any, floats: Any, preprocessed: Any = None) -> TrainState:
        batches = (ints, floats) if preprocessed is None else (ints, floats, preprocessed)
        state, _ = jax.lax.scan(self._one_step, state, batches)
        return state


def read_and_reset_loss(state: TrainState) -> tuple[TrainState, float | None, int]:
    """(state with the loss sum reset, mean loss of the steps since the last read (None: none), first non-finite
    step (−1: none)): one host sync."""
    steps = int(state.loss_steps)
    mean = float(state.loss_sum) / steps if steps else None
    nonfinite = int(state.nonfinite_step)
    state.loss_sum = jnp.zeros_like(state.loss_sum)
    state.loss_steps = jnp.zeros_like(state.loss_steps)
    return state, mean, nonfinite


def numpy_ids(layout: PackedColumns, ints: np.ndarray) -> dict[str, np.ndarray]:
    """A packed batch's id features ({feature: [B] or [B, length]}) split on the host, as the model's layout says."""
    ids = {name: ints[:, column] for name, column in layout.scalars}
    ids.update({name: ints[:, start:start + length] for name, start, length in layout.lists})
    return ids


def data_sharding(devices: list) -> Any:
    """The sharding of a [K, B, W] execution batch over `devices` along B (with one device, that device: a `cpu`
    target on a machine with a GPU trains on the CPU, not on JAX's default device)."""
    if len(devices) <= 1:
        return jax.sharding.SingleDeviceSharding(devices[0])
    mesh = jax.sharding.Mesh(np.asarray(devices), ("data",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, "data", None))
