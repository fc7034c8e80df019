"""The hidden model behind synthetic logs: who engages with which ad, and how soon.

The swipe logit mixes per-id effects with interactions a linear model cannot express:
  interest match (user_interests ∋ ad_category), placement × device_os, country × category group,
  and user_age × category direction.
Downstream events chain: install only after a swipe, purchase only after an install.
Each event type's delay after the impression is exponential with its own mean, so the probability
that a task's label is positive is exactly P(event) · (1 − exp(−window / mean_delay)).
Day to day (`logs.synthetic.drift`), the swipe base log-odds walks, the effects move (`Population.drifted`)
and new users and ads join (`Population.with_newcomers`); each day's probabilities stay exact.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

PLACEMENTS = ("feed", "stories", "discover", "spotlight", "chat")
DEVICE_OS = ("ios", "android", "web")
COUNTRIES = ("us", "gb", "de", "fr", "in", "br", "jp", "ca", "au", "mx")
MEAN_DELAY_SECONDS = {"view": 20.0, "swipe": 600.0, "install": 3600.0, "purchase": 6 * 3600.0}
CATEGORY_GROUPS = 8


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# Spread (std of the normal draw) of each hidden effect; the per-id ones are multiplied by `id_effect_scale`.
USER_EFFECT_STD = 0.5
AD_EFFECT_STD = 0.5
ADVERTISER_EFFECT_STD = 0.6
PLACEMENT_OS_STD = 0.7
COUNTRY_GROUP_STD = 0.6
SWIPE_BASE_LOGIT = -2.6
COUNTRY_WEIGHTS = np.array([30, 10, 8, 7, 15, 9, 8, 5, 4, 4], dtype=float)


@dataclass(frozen=True)
class Population:
    """Users, ads and the hidden effects that drive engagement."""

    user_country: np.ndarray
    user_os: np.ndarray
    user_age: np.ndarray
    user_interests: list[np.ndarray]
    user_interest_matrix: np.ndarray  # users × interests, 0/1
    user_bias: np.ndarray
    ad_advertiser: np.ndarray
    ad_category: np.ndarray
    ad_bid: np.ndarray
    ad_bias: np.ndarray
    advertiser_bias: np.ndarray
    placement_os: np.ndarray
    country_group: np.ndarray
    category_age_direction: np.ndarray
    effect_scale: float = 1.0

    @classmethod
    def draw(cls, rng: np.random.Generator, users: int, ads: int, advertisers: int,
             interests: int, max_interests: int, effect_scale: float = 1.0) -> Population:
        user_fields = _draw_users(rng, users, interests, max_interests, effect_scale)
        ad_fields = _draw_ads(rng, ads, advertisers, interests, effect_scale)
        return cls(
            **user_fields,
            **ad_fields,
            advertiser_bias=rng.normal(0.0, ADVERTISER_EFFECT_STD * effect_scale, size=advertisers),
            placement_os=rng.normal(0.0, PLACEMENT_OS_STD, size=(len(PLACEMENTS), len(DEVICE_OS))),
            country_group=rng.normal(0.0, COUNTRY_GROUP_STD, size=(len(COUNTRIES), CATEGORY_GROUPS)),
            category_age_direction=rng.choice([-1.0, 1.0], size=interests),
            effect_scale=effect_scale,
        )

    @property
    def users(self) -> int:
        return self.user_bias.size

    @property
    def ads(self) -> int:
        return self.ad_bias.size

    def with_newcomers(self, rng: np.random.Generator, users: int, ads: int, max_interests: int) -> Population:
        """The same population plus `users` new users and `ads` new ads (of the existing advertisers), drawn
        like the first ones; they take the next ids."""
        if users == 0 and ads == 0:
            return self
        interests = self.category_age_direction.size
        new_users = _draw_users(rng, users, interests, max_interests, self.effect_scale)
        new_ads = _draw_ads(rng, ads, self.advertiser_bias.size, interests, self.effect_scale)
        merged: dict[str, Any] = {}
        for name, values in (new_users | new_ads).items():
            old = getattr(self, name)
            merged[name] = old + values if isinstance(old, list) else np.concatenate([old, values])
        return replace(self, **merged)

    def drifted(self, rng: np.random.Generator, share: float) -> Population:
        """A day later: each per-id and interaction effect keeps sqrt(1 - share) of itself and gets
        sqrt(share) of a fresh draw of the same spread, so the effects move but their spread stays."""
        if share == 0:
            return self
        keep, fresh = np.sqrt(1.0 - share), np.sqrt(share)

        def moved(values: np.ndarray, std: float) -> np.ndarray:
            return keep * values + fresh * rng.normal(0.0, std, size=values.shape)

        scale = self.effect_scale
        return replace(
            self,
            user_bias=moved(self.user_bias, USER_EFFECT_STD * scale),
            ad_bias=moved(self.ad_bias, AD_EFFECT_STD * scale),
            advertiser_bias=moved(self.advertiser_bias, ADVERTISER_EFFECT_STD * scale),
            placement_os=moved(self.placement_os, PLACEMENT_OS_STD),
            country_group=moved(self.country_group, COUNTRY_GROUP_STD),
        )

    def event_probabilities(self, user: np.ndarray, ad: np.ndarray, placement: np.ndarray,
                            base_logit: float | np.ndarray = SWIPE_BASE_LOGIT) -> dict[str, np.ndarray]:
        """P(event type happens at all) per impression; `base_logit`: the swipe log-odds before effects (one
        value, or one per impression)."""
        category = self.ad_category[ad]
        match = self.user_interest_matrix[user, category].astype(float)
        age = (self.user_age[user] - 41.5) / 13.9
        swipe_logit = (
            base_logit
            + self.user_bias[user]
            + self.ad_bias[ad]
            + 1.4 * match
            + self.placement_os[placement, self.user_os[user]]
            + self.country_group[self.user_country[user], category % CATEGORY_GROUPS]
            + 0.5 * age * self.category_age_direction[category]
            + 0.2 * (np.log1p(self.ad_bid[ad]) - 0.55)
        )
        p_swipe = sigmoid(swipe_logit)
        p_install_given_swipe = sigmoid(-1.2 + self.advertiser_bias[self.ad_advertiser[ad]] + 0.8 * match)
        p_purchase_given_install = sigmoid(-1.0 + 0.5 * self.advertiser_bias[self.ad_advertiser[ad]])
        p_view = sigmoid(1.2 + 0.5 * self.placement_os[placement, self.user_os[user]])
        return {
            "view": p_view,
            "swipe": p_swipe,
            "install": p_swipe * p_install_given_swipe,
            "purchase": p_swipe * p_install_given_swipe * p_purchase_given_install,
        }


def label_probability(p_event: np.ndarray, event_type: str, window_seconds: float) -> np.ndarray:
    """P(an event of `event_type` lands within `window_seconds` after the impression)."""
    return p_event * (1.0 - np.exp(-window_seconds / MEAN_DELAY_SECONDS[event_type]))


def _draw_users(rng: np.random.Generator, users: int, interests: int, max_interests: int,
                effect_scale: float) -> dict:
    lengths = rng.integers(1, max_interests + 1, size=users)
    user_interests = [np.sort(rng.choice(interests, size=k, replace=False)) for k in lengths]
    matrix = np.zeros((users, interests), dtype=np.int8)
    for user, chosen in enumerate(user_interests):
        matrix[user, chosen] = 1
    return {
        "user_interests": user_interests,
        "user_interest_matrix": matrix,
        "user_country": rng.choice(len(COUNTRIES), size=users, p=COUNTRY_WEIGHTS / COUNTRY_WEIGHTS.sum()),
        "user_os": rng.choice(len(DEVICE_OS), size=users, p=[0.45, 0.45, 0.10]),
        "user_age": rng.integers(18, 66, size=users),
        "user_bias": rng.normal(0.0, USER_EFFECT_STD * effect_scale, size=users),
    }


def _draw_ads(rng: np.random.Generator, ads: int, advertisers: int, interests: int, effect_scale: float) -> dict:
    return {
        "ad_advertiser": rng.integers(0, advertisers, size=ads),
        "ad_category": rng.integers(0, interests, size=ads),
        "ad_bid": np.round(rng.lognormal(0.0, 0.8, size=ads), 4),
        "ad_bias": rng.normal(0.0, AD_EFFECT_STD * effect_scale, size=ads),
    }
