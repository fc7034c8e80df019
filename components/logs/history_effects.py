"""Clicks that depend on what a user and an ad did before, as in real ad logs (the synthetic server's
`logs.synthetic.history`).

Two effects on every impression's engagement log-odds, both off by default (the logs are then byte for byte
what they were without them):

- **user propensity that drifts**: each user has a latent propensity that moves from one day to the next,
  `m_d = persistence · m_{d−1} + N(0, user_propensity_std²)` (stationary). A user's id embedding learns the
  average over the train days; the user's recent clicks say where the propensity is today;
- **ad fatigue**: the log-odds fall by `ad_fatigue · log1p(k)` where `k` is how often this user was shown this ad
  before (over the whole log, in time order): the first exposure works best.

`HistoryEffects` keeps the state across days; the generator calls `logit_shifts` once per day, with the day's
impressions in time order, on its own random stream.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from configs.logs import SyntheticHistoryConfig


class HistoryEffects:
    def __init__(self, spec: SyntheticHistoryConfig, rng: np.random.Generator):
        self.spec = spec
        self.rng = rng
        self.propensity: dict[int, float] = {}
        self.exposures: dict[tuple[int, int], int] = defaultdict(int)

    def logit_shifts(self, user: np.ndarray, ad: np.ndarray) -> dict[str, np.ndarray]:
        """Per impression of one day (in time order), the shift of its engagement log-odds by each effect that is
        on: `propensity`, `fatigue` (ground_truth.json's floors without each come from these)."""
        spec = self.spec
        shifts: dict[str, np.ndarray] = {}
        if spec.user_propensity_std > 0:
            for u in np.unique(user):
                previous = self.propensity.get(int(u))
                innovation = self.rng.normal(0.0, spec.user_propensity_std)
                if previous is None:  # first seen: a draw from the stationary distribution
                    value = innovation / np.sqrt(max(1.0 - spec.persistence ** 2, 1e-9))
                else:
                    value = spec.persistence * previous + innovation
                self.propensity[int(u)] = value
            shifts["propensity"] = np.array([self.propensity[int(u)] for u in user], dtype=float)
        if spec.ad_fatigue > 0:
            seen = np.empty(len(user))
            for row, pair in enumerate(zip(user.tolist(), ad.tolist())):
                seen[row] = self.exposures[pair]
                self.exposures[pair] += 1
            shifts["fatigue"] = -spec.ad_fatigue * np.log1p(seen)
        return shifts
