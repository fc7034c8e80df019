"""The model layers against outputs computed by hand: weights set explicitly, expected values written out.

Keras `Dense` computes y = x K + b with K of shape [in, out], so a matrix W applied as W x is set as K = W^T.
"""

import math

import numpy as np
import pytest
from keras_rs.layers import FeatureCross

from components.train.embedding import FeatureEmbedding
from components.train.models import CGC, MLP, PLE, CrossLayer

X0 = np.array([[1.0, 2.0]], "float32")
X = np.array([[3.0, -1.0]], "float32")


def built(layer, *inputs):
    layer(*inputs)  # builds every sublayer, so their weights can be set
    return layer


def set_dense(dense, kernel, bias=None):
    dense.kernel.assign(np.array(kernel, "float32"))
    if bias is not None:
        dense.bias.assign(np.array(bias, "float32"))


def projections(expert):
    """A cross expert's (keras-rs `FeatureCross`) Dense layers, in the order it applies them: [W] or [V, U]."""
    return [expert.dense] if expert.projection_dim is None else [expert.down_proj_dense, expert.dense]


def test_full_rank_cross_layer_is_x0_times_w_x_plus_b_plus_x():
    layer = built(CrossLayer(), X0, X)
    (w,) = projections(layer.experts[0])
    # W = [[0.5, -1], [2, 0.25]], b = [0.1, -0.2]:
    #   W x = [0.5·3 − 1·(−1), 2·3 + 0.25·(−1)] = [2.5, 5.75];  + b = [2.6, 5.55]
    #   x0 ⊙ (W x + b) = [1·2.6, 2·5.55] = [2.6, 11.1];  + x = [5.6, 10.1]
    set_dense(w, [[0.5, 2.0], [-1.0, 0.25]], [0.1, -0.2])
    np.testing.assert_allclose(layer(X0, X).numpy(), [[5.6, 10.1]], rtol=1e-6)


def test_full_rank_cross_layer_matches_numpy_over_a_batch():
    rng = np.random.default_rng(0)
    x0, x = rng.normal(size=(4, 3)).astype("float32"), rng.normal(size=(4, 3)).astype("float32")
    layer = built(CrossLayer(), x0, x)
    w, b = rng.normal(size=(3, 3)).astype("float32"), rng.normal(size=3).astype("float32")
    set_dense(projections(layer.experts[0])[0], w.T, b)
    np.testing.assert_allclose(layer(x0, x).numpy(), x0 * (x @ w.T + b) + x, rtol=1e-5, atol=1e-6)


def test_low_rank_cross_layer_projects_through_v_then_u():
    layer = built(CrossLayer(projection_dim=1), X0, X)
    v, u = projections(layer.experts[0])
    # V^T x = 1·3 + 2·(−1) = 1;  U (V^T x) + b = [0.5, −1] + [0, 1] = [0.5, 0];  x0 ⊙ … = [0.5, 0];  + x = [3.5, −1]
    set_dense(v, [[1.0], [2.0]])
    set_dense(u, [[0.5, -1.0]], [0.0, 1.0])
    np.testing.assert_allclose(layer(X0, X).numpy(), [[3.5, -1.0]], rtol=1e-6)


def test_a_mixture_of_cross_experts_mixes_them_with_a_softmax_gate_on_x():
    layer = built(CrossLayer(projection_dim=1, num_experts=2), X0, X)
    (v1, u1), (v2, u2) = map(projections, layer.experts)
    set_dense(v1, [[1.0], [2.0]])  # expert 1, as above: x0 ⊙ (U V^T x + b) = [0.5, 0]
    set_dense(u1, [[0.5, -1.0]], [0.0, 1.0])
    set_dense(v2, [[0.0], [1.0]])  # expert 2: V^T x = −1;  U (−1) = [−1, −1];  x0 ⊙ … = [−1, −2]
    set_dense(u2, [[1.0, 1.0]], [0.0, 0.0])
    # gate logits G x = [ln3/3 · 3, 0] = [ln 3, 0] → softmax [3/4, 1/4]
    set_dense(layer.gate, [[math.log(3) / 3, 0.0], [0.0, 0.0]])
    # 3/4 · [0.5, 0] + 1/4 · [−1, −2] = [0.125, −0.5];  + x = [3.125, −1.5]
    np.testing.assert_allclose(layer(X0, X).numpy(), [[3.125, -1.5]], rtol=1e-6)


@pytest.mark.parametrize(("projection_dim", "num_experts", "paths"), [
    (None, 1, ["cross_0/w_0/kernel", "cross_0/w_0/bias"]),
    (1, 2, ["cross_0/v_0/kernel", "cross_0/u_0/kernel", "cross_0/u_0/bias",
            "cross_0/v_1/kernel", "cross_0/u_1/kernel", "cross_0/u_1/bias", "cross_0/gate/kernel"]),
])
def test_cross_experts_are_keras_rs_feature_crosses_whose_weight_paths_do_not_depend_on_the_process(
        projection_dim, num_experts, paths):
    # warm start and export match dense weights by path: a second layer built in the same process (where Keras's
    # name counter has moved on) has the same paths, the ones champions exported before keras-rs was used hold
    first, second = (built(CrossLayer(projection_dim, num_experts, name="cross_0"), X0, X) for _ in range(2))
    assert all(isinstance(expert, FeatureCross) for expert in first.experts)
    assert [v.path for v in first.weights] == [v.path for v in second.weights] == paths


def test_mlp_is_relu_dense_layers_in_order():
    x = np.array([[1.0, -2.0], [-1.0, 0.0]], "float32")
    mlp = built(MLP([2, 1]), x)
    first, second = mlp.dense_layers
    set_dense(first, [[1.0, -1.0], [0.5, 2.0]], [0.5, 1.0])
    set_dense(second, [[2.0], [3.0]], [-0.25])
    # row 1: x K0 + b0 = [1 − 1, −1 − 4] + [0.5, 1] = [0.5, −4] → relu [0.5, 0];  2·0.5 + 3·0 − 0.25 = 0.75
    # row 2: x K0 + b0 = [−1, 1] + [0.5, 1] = [−0.5, 2] → relu [0, 2];           2·0 + 3·2 − 0.25 = 5.75
    np.testing.assert_allclose(mlp(x).numpy(), [[0.75], [5.75]], rtol=1e-6)
    set_dense(second, [[2.0], [3.0]], [-7.0])  # both below zero: the last layer's relu clamps them
    np.testing.assert_array_equal(mlp(x).numpy(), [[0.0], [0.0]])


TASK_INPUTS = {"click": np.array([[1.0, 0.0]], "float32"), "install": np.array([[0.0, 1.0]], "float32")}
SHARED_INPUT = np.array([[1.0, 1.0]], "float32")


def set_cgc_experts(level):
    """click expert relu(2 h0 + 5 h1), install expert relu(3 h1), shared expert relu(h0 + h1 − 1): on the inputs
    above 2 (on h_click), 3 (on h_install) and 1 (on h_shared); on any other input they differ."""
    (click,) = level.experts["click"]
    (install,) = level.experts["install"]
    (shared,) = level.shared
    set_dense(click.dense_layers[0], [[2.0], [5.0]], [0.0])
    set_dense(install.dense_layers[0], [[0.0], [3.0]], [0.0])
    set_dense(shared.dense_layers[0], [[1.0], [1.0]], [-1.0])


def test_cgc_mixes_each_tasks_and_the_shared_experts_with_a_softmax_gate_on_the_tasks_input():
    level = built(CGC(["click", "install"], task_experts=1, shared_experts=1, expert_layers=[1]),
                  TASK_INPUTS, SHARED_INPUT)
    set_cgc_experts(level)
    # click gate on h_click = [1, 0]: logits [1·0 + 0·ln3, 0] = [0, 0] → [1/2, 1/2] (on h_shared it would be [ln3, 0])
    set_dense(level.gates["click"], [[0.0, 0.0], [math.log(3), 0.0]], [0.0, 0.0])
    # install gate: bias only, [ln 3, 0] → [3/4, 1/4]
    set_dense(level.gates["install"], [[0.0, 0.0], [0.0, 0.0]], [math.log(3), 0.0])
    # shared gate on h_shared over [click expert, install expert, shared expert]: [0, ln 2, 0] → [1/4, 1/2, 1/4]
    set_dense(level.shared_gate, [[0.0, math.log(2), 0.0], [0.0, 0.0, 0.0]], [0.0, 0.0, 0.0])
    mixed, shared = level(TASK_INPUTS, SHARED_INPUT)
    np.testing.assert_allclose(mixed["click"].numpy(), [[0.5 * 2 + 0.5 * 1]], rtol=1e-6)  # 1.5
    np.testing.assert_allclose(mixed["install"].numpy(), [[0.75 * 3 + 0.25 * 1]], rtol=1e-6)  # 2.5
    np.testing.assert_allclose(shared.numpy(), [[0.25 * 2 + 0.5 * 3 + 0.25 * 1]], rtol=1e-6)  # 2.25


def test_the_last_cgc_level_has_no_shared_output():
    level = CGC(["click"], task_experts=1, shared_experts=1, expert_layers=[1], shared_output=False)
    _, shared = level({"click": TASK_INPUTS["click"]}, SHARED_INPUT)
    assert shared is None and not hasattr(level, "shared_gate")


@pytest.fixture
def one_level_ple():
    """A PLE body alone (no features: the body is called on x_0 directly)."""
    model = PLE(levels=1, task_experts=1, shared_experts=1, expert_layers=[1], tower_layers=[1],
                embedding=FeatureEmbedding({}), numeric_features=["a", "b"], tasks=["click", "install"])
    model.body(SHARED_INPUT)
    return model


def test_ple_body_is_gate_mixed_experts_then_a_relu_tower_and_a_linear_head_per_task(one_level_ple):
    (level,) = one_level_ple.extraction
    set_cgc_experts(level)  # on x0 = [1, 1]: click expert 2 + 5 = 7, install expert 3, shared expert 1
    set_dense(level.gates["click"], [[0.0, 0.0], [math.log(3), 0.0]], [0.0, 0.0])  # on x0: [ln 3, 0] → [3/4, 1/4]
    set_dense(level.gates["install"], [[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0])  # [1/2, 1/2]
    # click: 3/4·7 + 1/4·1 = 5.5;  tower relu(5.5 − 5) = 0.5;  head 2·0.5 + 0.1 = 1.1
    # install: 1/2·3 + 1/2·1 = 2;  tower relu(2 − 5) = 0;     head 4·0 − 0.3 = −0.3
    for task, head in (("click", ([[2.0]], [0.1])), ("install", ([[4.0]], [-0.3]))):
        set_dense(one_level_ple.towers[task].dense_layers[0], [[1.0]], [-5.0])
        set_dense(one_level_ple.heads[task], *head)
    logits = one_level_ple.body(SHARED_INPUT)
    np.testing.assert_allclose(logits["click"].numpy(), [[1.1]], rtol=1e-6)
    np.testing.assert_allclose(logits["install"].numpy(), [[-0.3]], rtol=1e-6)
