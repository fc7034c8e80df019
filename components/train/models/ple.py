"""PLE, Progressive Layered Extraction (Tang et al., 2020): stacked CGC levels, then a tower per task.

One CGC (customized gate control) level, for tasks t = 1..T with inputs h_t and shared input h_s:
    E_t = task t's own experts,  E_s = shared experts
    h_t' = Σ_{e ∈ E_t ∪ E_s} softmax(G_t h_t)_e · e(h_t)        (task e on h_t, shared e on h_s)
    h_s' = Σ_{e ∈ ∪E_t ∪ E_s} softmax(G_s h_s)_e · e(·)         (not needed after the last level)
    logit_t = w_t^T Tower_t(h_t^{(L)}) + b_t
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras

from components.train.models.base import RankingModel
from components.train.models.mlp import MLP


class CGC(keras.layers.Layer):
    """One extraction level: task-owned and shared experts, one softmax gate per task (and shared)."""

    def __init__(
        self, tasks: list[str], task_experts: int, shared_experts: int, expert_layers: list[int],
        shared_output: bool = True, **kwargs,
    ):
        super().__init__(**kwargs)
        self.tasks = list(tasks)
        self.task_experts = task_experts
        self.shared_experts = shared_experts
        self.expert_layers = list(expert_layers)
        self.shared_output = shared_output
        self.experts = {
            task: [MLP(expert_layers, name=f"{task}_expert_{i}") for i in range(task_experts)] for task in tasks
        }
        self.shared = [MLP(expert_layers, name=f"shared_expert_{i}") for i in range(shared_experts)]
        self.gates = {
            task: keras.layers.Dense(task_experts + shared_experts, name=f"{task}_gate") for task in tasks
        }
        if shared_output:
            self.shared_gate = keras.layers.Dense(len(tasks) * task_experts + shared_experts, name="shared_gate")

    @staticmethod
    def _mix(gate_logits, expert_outputs):
        gates = keras.ops.softmax(gate_logits, axis=-1)  # [batch, E]
        stacked = keras.ops.stack(expert_outputs, axis=1)  # [batch, E, d]
        return keras.ops.sum(stacked * keras.ops.expand_dims(gates, -1), axis=1)

    def call(self, task_inputs: dict[str, Any], shared_input):
        shared_outputs = [expert(shared_input) for expert in self.shared]
        task_outputs = {task: [expert(task_inputs[task]) for expert in self.experts[task]] for task in self.tasks}
        mixed = {
            task: self._mix(self.gates[task](task_inputs[task]), task_outputs[task] + shared_outputs)
            for task in self.tasks
        }
        shared = None
        if self.shared_output:
            every = [out for task in self.tasks for out in task_outputs[task]] + shared_outputs
            shared = self._mix(self.shared_gate(shared_input), every)
        return mixed, shared

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "tasks": self.tasks,
            "task_experts": self.task_experts,
            "shared_experts": self.shared_experts,
            "expert_layers": self.expert_layers,
            "shared_output": self.shared_output,
        }


class PLE(RankingModel):
    def __init__(
        self,
        levels: int = 2,
        task_experts: int = 1,
        shared_experts: int = 2,
        expert_layers: Sequence[int] = (32,),
        tower_layers: Sequence[int] = (16,),
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.levels = levels
        self.task_experts = task_experts
        self.shared_experts = shared_experts
        self.expert_layers = list(expert_layers)
        self.tower_layers = list(tower_layers)
        self.extraction = [
            CGC(self.tasks, task_experts, shared_experts, self.expert_layers, shared_output=i < levels - 1, name=f"cgc_{i}")
            for i in range(levels)
        ]
        self.towers = {task: MLP(self.tower_layers, name=f"tower_{task}") for task in self.tasks}
        self.heads = {task: keras.layers.Dense(1, name=f"head_{task}") for task in self.tasks}

    def body(self, x0, training: bool = False):
        task_inputs = {task: x0 for task in self.tasks}
        shared = x0
        for level in self.extraction:
            task_inputs, shared = level(task_inputs, shared)
        return {task: self.heads[task](self.towers[task](task_inputs[task])) for task in self.tasks}

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "levels": self.levels,
            "task_experts": self.task_experts,
            "shared_experts": self.shared_experts,
            "expert_layers": self.expert_layers,
            "tower_layers": self.tower_layers,
        }
