"""`promotion.*` in the config: the tolerance is relative by default, absolute when asked, never both; the scoring
bounds are validated at load, naming the field."""

from __future__ import annotations

import pytest

from configs import load_config
from configs.errors import ConfigError
from configs.promotion import PromotionConfig


def test_the_default_tolerance_is_relative_to_the_champion():
    promotion = load_config().promotion
    assert (promotion.tolerance_form, promotion.logloss_tolerance_relative, promotion.logloss_tolerance) == (
        "relative", 0.001, None)
    assert promotion.tolerance_nats(0.0075) == pytest.approx(0.0000075)
    assert promotion.tolerance_nats(0.35) == pytest.approx(0.00035)
    assert promotion.on_unscorable_champion == "keep"


def test_an_absolute_tolerance_replaces_the_relative_default_and_survives_the_step_json():
    promotion = load_config(None, ["promotion.logloss_tolerance=0.0005"]).promotion
    assert (promotion.tolerance_form, promotion.logloss_tolerance_relative) == ("absolute", None)
    assert promotion.tolerance_nats(0.0075) == 0.0005
    assert PromotionConfig.model_validate_json(promotion.model_dump_json()) == promotion


@pytest.mark.parametrize(("overrides", "message"), [
    (["promotion.logloss_tolerance=0.001", "promotion.logloss_tolerance_relative=0.01"],
     "promotion: logloss_tolerance_relative and logloss_tolerance are both set: keep one"),
    (["promotion.logloss_tolerance_relative=null"], "promotion: set logloss_tolerance_relative"),
    (["promotion.logloss_tolerance_relative=0.8"], "promotion.logloss_tolerance_relative: Input should be less than"),
    (["promotion.logloss_tolerance_relative=.nan"], "promotion.logloss_tolerance_relative: Input should be a finite"),
    (["promotion.scoring_batch_size=0"], "promotion.scoring_batch_size: Input should be greater than or equal to 1"),
    (["promotion.max_eval_examples=1"], "promotion.max_eval_examples: Input should be greater than or equal to 2"),
    (["promotion.on_unscorable_champion=ignore"], "promotion.on_unscorable_champion: Input should be 'promote' or"),
    (["promotion.tolerance=0.001"], "promotion.tolerance: unknown key"),
])
def test_bad_promotion_settings_fail_at_load_naming_the_field(overrides, message):
    with pytest.raises(ConfigError, match="invalid config") as error:
        load_config(None, overrides)
    assert message in str(error.value)


def test_the_shipped_vertex_config_states_its_tolerance_relative():
    from pathlib import Path

    promotion = load_config(Path(__file__).parents[3] / "configs" / "vertex.yaml").promotion
    assert promotion.tolerance_form == "relative"
