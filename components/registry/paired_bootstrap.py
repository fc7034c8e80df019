"""The 95% interval of the paired log-loss difference, by a paired bootstrap that holds when positives are rare.

    d_i = ℓ_challenger(i) − ℓ_champion(i) over the n eval examples; d̄ their mean, se = s_d / √n.
    A resample draws n examples with replacement; over `resamples` resamples the studentized difference
    t* = (d̄* − d̄) / se* has quantiles q_2.5, q_97.5, and the interval is (d̄ − q_97.5·se, d̄ − q_2.5·se)
    (the bootstrap-t; a seeded generator, so the same examples and models give the same interval, and a retried
    promotion decides as its first attempt did).

Why not d̄ ± t·s/√n: on a low-rate day a handful of positives carry nearly all of the difference (their d is
large, the negatives' tiny), so d̄ is far from normal, and a day that happened to have fewer positives than usual
both flatters the worse model and shrinks s. Resampling the examples lets the number of positives vary as it
would on another day of the same size, and studentizing each resample carries the link between d̄ and s into
the interval. On simulated install-rate days (2,000 examples, about 5 positives, a challenger blurred 10% toward
the mean logit, so truly worse; `tests/components/registry/test_paired_bootstrap.py`), the upper bound fell below the true
difference, i.e. the gate would have taken the worse model for no worse, on about 12% of days with the t-interval
and about 5% with this one (nominal 2.5%): better, not exact, which is why too few positives keep the champion
whatever the interval says (`promotion.min_eval_positives`). With thousands of positives the two agree.

How it stays in bounded memory over a day of millions of examples: a resample is split by label. The number of
positives it holds is Binomial(n, positives/n); each label's stratum then contributes the sum, and the sum of
squares, of that many draws from its own d values:
- a stratum of at most `EXACT_STRATUM_MAX` examples (on a low-rate day: the positives) keeps its d values and is
  resampled exactly;
- a larger stratum keeps only its count, mean and sum of squared deviations (merged batch by batch); the sum of c
  draws from it is c·mean + √c·sd·z (its normal approximation, sound for c ≥ 10,000), their sum of squares its
  expectation c·(sd² + mean²).
With both strata small this is exactly the ordinary paired bootstrap-t.
"""

from __future__ import annotations

import numpy as np

EXACT_STRATUM_MAX = 10_000
SEED = 20_260_305
METHOD = "paired bootstrap-t"


class LabelStratum:
    """The d values of one label's examples: count, mean and M2 always; the values themselves while there are at
    most `EXACT_STRATUM_MAX` of them."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self._values: list[np.ndarray] | None = []

    def add(self, differences: np.ndarray) -> None:
        n = int(differences.size)
        if n == 0:
            return
        batch_mean = float(differences.mean())
        batch_m2 = float(((differences - batch_mean) ** 2).sum())
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean += delta * n / total
        self.m2 += batch_m2 + delta * delta * self.count * n / total
        self.count = total
        if self._values is not None:
            self._values.append(np.asarray(differences, dtype=np.float64).copy())
            if self.count > EXACT_STRATUM_MAX:
                self._values = None

    @property
    def exact(self) -> bool:
        return self._values is not None

    @property
    def variance(self) -> float:
        """The d values' variance (divided by their count: the variance of one draw from them)."""
        return max(self.m2, 0.0) / self.count if self.count else 0.0

    def resampled(self, draws: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """For each entry c of `draws`: the sum and the sum of squares of c draws with replacement from this
        stratum's d values."""
        if self.count == 0:
            return np.zeros(draws.shape), np.zeros(draws.shape)
        if self._values is not None:
            values = np.concatenate(self._values)
            sums, squares = np.empty(draws.shape), np.empty(draws.shape)
            for index, count in enumerate(draws):
                drawn = values[rng.integers(0, values.size, int(count))]
                sums[index], squares[index] = drawn.sum(), (drawn * drawn).sum()
            return sums, squares
        sd = float(np.sqrt(self.variance))
        sums = draws * self.mean + np.sqrt(draws) * sd * rng.standard_normal(draws.shape)
        return sums, draws * (self.variance + self.mean * self.mean)


class PairedBootstrap:
    """Accumulates d and the labels batch by batch; `interval()` is the bootstrap's 95% interval of d̄."""

    def __init__(self) -> None:
        self.positives = LabelStratum()
        self.negatives = LabelStratum()

    def add(self, differences: np.ndarray, labels: np.ndarray) -> None:
        if differences.shape != labels.shape:
            raise ValueError(f"differences and labels differ in length: {differences.shape} vs {labels.shape}")
        positive = labels >= 0.5
        self.positives.add(differences[positive])
        self.negatives.add(differences[~positive])

    @property
    def examples(self) -> int:
        return self.positives.count + self.negatives.count

    @property
    def mean(self) -> float:
        n = self.examples
        return (self.positives.count * self.positives.mean + self.negatives.count * self.negatives.mean) / n

    def standard_error(self) -> float:
        """s_d / √n over all the examples (the two strata's moments pooled)."""
        n = self.examples
        pos, neg = self.positives, self.negatives
        m2 = pos.m2 + neg.m2 + (pos.count * neg.count / n) * (pos.mean - neg.mean) ** 2
        return float(np.sqrt(max(m2, 0.0) / (n - 1) / n))

    def interval(self, resamples: int, seed: int = SEED) -> tuple[float, float]:
        n = self.examples
        if n < 2:
            raise ValueError("a paired comparison needs at least 2 eval examples")
        mean, se = self.mean, self.standard_error()
        if se == 0.0:
            return mean, mean
        rng = np.random.default_rng(seed)
        positives = rng.binomial(n, self.positives.count / n, size=resamples)
        pos_sums, pos_squares = self.positives.resampled(positives, rng)
        neg_sums, neg_squares = self.negatives.resampled(n - positives, rng)
        sums, squares = pos_sums + neg_sums, pos_squares + neg_squares
        means = sums / n
        ses = np.sqrt(np.maximum(squares - sums * sums / n, 0.0) / (n - 1) / n)
        shifts = means - mean
        studentized = np.divide(shifts, ses, out=np.where(shifts == 0, 0.0, np.copysign(np.inf, shifts)),
                                where=ses > 0)
        low_q, high_q = np.quantile(studentized, [0.025, 0.975])
        return float(mean - high_q * se), float(mean - low_q * se)

    def describe(self, resamples: int) -> str:
        """How the interval was made, for the decision record."""
        exact = [name for name, stratum in (("positives", self.positives), ("negatives", self.negatives))
                 if stratum.exact and stratum.count]
        normal = [name for name, stratum in (("positives", self.positives), ("negatives", self.negatives))
                  if not stratum.exact]
        parts = [f"{METHOD}, {resamples:,} resamples of the {self.examples:,} examples"]
        if exact:
            parts.append(f"{' and '.join(exact)} resampled exactly")
        if normal:
            parts.append(f"the sum of the resampled {' and '.join(normal)} from its normal approximation "
                         f"(more than {EXACT_STRATUM_MAX:,} of them)")
        return "; ".join(parts)
