"""Where each step runs: a local subprocess, or on Vertex (CustomJob machine specs, Dataflow options).

The local backend needs no placement. The vertex backend's rules live here so `ranking.py` stays the
one DAG definition for both backends. Two hooks per step: `*_component` may swap the component for
one that runs elsewhere (e.g. a Vertex CustomJob wrapper); `place_*` sets options on the created task.
"""

from __future__ import annotations

from typing import Literal

from kfp import dsl

from configs.schema import AdrankConfig
from configs.training import TargetConfig

Backend = Literal["local", "vertex"]


def training_component(component, target: TargetConfig, config: AdrankConfig, backend: Backend):
    return component


def place_training(
    task: dsl.PipelineTask, target: TargetConfig, config: AdrankConfig, backend: Backend
) -> dsl.PipelineTask:
    return task


def place_preprocess(task: dsl.PipelineTask, config: AdrankConfig, backend: Backend) -> dsl.PipelineTask:
    return task
