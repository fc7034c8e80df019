"""The hidden model behind synthetic logs: who engages with which ad, and how soon.

The swipe logit mixes per-id effects with interactions a linear model cannot express:
  interest match (user_interests ∋ ad_category), placement × device_os, country × category group,
  and user_age × category direction.
Downstream events chain: install only after a swipe, purchase only after an install.
Each event type's delay after the impression is exponential with its own mean, so the probability
that a task's label is positive is exactly P(event) · (1 − exp(−window / mean_delay)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PLACEMENTS = ("feed", "stories", "discover", "spotlight", "chat")
DEVICE_OS = ("ios", "android", "web")
COUNTRIES = ("us", "gb", "de", "fr", "in", "br", "jp", "ca", "au", "mx")
MEAN_DELAY_SECONDS = {"view": 20.0, "swipe": 600.0, "install": 3600.0, "purchase": 6 * 3600.0}
CATEGORY_GROUPS = 8


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


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

    @classmethod
    def draw(cls, rng: np.random.Generator, users: int, ads: int, advertisers: int,
             interests: int, max_interests: int) -> Population:
        lengths = rng.integers(1, max_interests + 1, size=users)
        user_interests = [np.sort(rng.choice(interests, size=k, replace=False)) for k in lengths]
        matrix = np.zeros((users, interests), dtype=np.int8)
        for user, chosen in enumerate(user_interests):
            matrix[user, chosen] = 1
        country_weights = np.array([30, 10, 8, 7, 15, 9, 8, 5, 4, 4], dtype=float)
        return cls(
            user_country=rng.choice(len(COUNTRIES), size=users, p=country_weights / country_weights.sum()),
            user_os=rng.choice(len(DEVICE_OS), size=users, p=[0.45, 0.45, 0.10]),
            user_age=rng.integers(18, 66, size=users),
            user_interests=user_interests,
            user_interest_matrix=matrix,
            user_bias=rng.normal(0.0, 0.5, size=users),
            ad_advertiser=rng.integers(0, advertisers, size=ads),
            ad_category=rng.integers(0, interests, size=ads),
            ad_bid=np.round(rng.lognormal(0.0, 0.8, size=ads), 4),
            ad_bias=rng.normal(0.0, 0.5, size=ads),
            advertiser_bias=rng.normal(0.0, 0.6, size=advertisers),
            placement_os=rng.normal(0.0, 0.7, size=(len(PLACEMENTS), len(DEVICE_OS))),
            country_group=rng.normal(0.0, 0.6, size=(len(COUNTRIES), CATEGORY_GROUPS)),
            category_age_direction=rng.choice([-1.0, 1.0], size=interests),
        )

    def event_probabilities(self, user: np.ndarray, ad: np.ndarray, placement: np.ndarray) -> dict[str, np.ndarray]:
        """P(event type happens at all) per impression."""
        category = self.ad_category[ad]
        match = self.user_interest_matrix[user, category].astype(float)
        age = (self.user_age[user] - 41.5) / 13.9
        swipe_logit = (
            -2.6
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
