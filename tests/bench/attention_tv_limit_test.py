#!/usr/bin/env python3
"""bench/attention_tv_limit.py against sampling: its closed-form second
moments E[Y^2] against their Monte Carlo mean over many omega draws, and its
m -> infinity limit of sqrt(m) E[TV] against the TV of sampled estimates at
a large m. Small norms (sigma = 0.25), where the estimator's tails are light
enough for sampling to settle."""

import math
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import attention_tv_limit as limit  # noqa: E402


def inputs(sigma, queries, keys, seed):
    rng = np.random.default_rng(seed)
    scale = sigma / limit.D ** 0.25
    return (rng.standard_normal((queries, limit.D)) * scale,
            rng.standard_normal((keys, limit.D)) * scale)


class SecondMomentTest(unittest.TestCase):
    def test_matches_the_mean_over_sampled_features(self):
        q, k = inputs(0.25, 3, 6, seed=1)
        p = limit.softmax_rows(q @ k.T)
        draws = 400_000
        for a in (-0.03, 0.0, 0.01, limit.a_star(q, k)):
            with self.subTest(a=a):
                var, log_scale = limit.second_moments(q, k, a)
                expected = var * np.exp(log_scale)[:, None]
                d_factor = (1.0 - 4.0 * a) ** (limit.D / 4)
                rng = np.random.default_rng(7)
                total = np.zeros_like(expected)
                total_sq = np.zeros_like(expected)
                for _ in range(draws // 50_000):
                    omega = rng.standard_normal((50_000, limit.D))
                    fq = d_factor * limit.features(q, omega, a).T  # n x Lq
                    fk = d_factor * limit.features(k, omega, a).T  # n x Lk
                    # Y_ij = f(q_i) (f(k_j) - P_ij sum_l f(k_l)), per draw.
                    y = fq[:, :, None] * (fk[:, None, :] -
                                          p[None] * fk.sum(1)[:, None, None])
                    total += (y * y).sum(0)
                    total_sq += (y ** 4).sum(0)
                mean = total / draws
                # Five standard errors of the sampled mean, from the samples'
                # own spread (Y^2 is roughly log-normal with log-sd ~ 1.5 here,
                # so 400,000 draws give a relative error of a few per cent).
                stderr = np.sqrt((total_sq / draws - mean ** 2) / draws)
                np.testing.assert_array_less(np.abs(mean - expected),
                                             5.0 * stderr)

    def test_rejects_an_infinite_variance(self):
        q, k = inputs(0.25, 2, 3, seed=2)
        with self.assertRaises(ValueError):
            limit.second_moments(q, k, 0.125)


class LimitTest(unittest.TestCase):
    def test_sampled_tv_approaches_the_limit(self):
        m = 4096
        for name, factor in (("FAVOR+", 0.0), ("FAVOR++ at A*", 1.0)):
            sampled, predicted = [], []
            for seed in range(4):
                q, k = inputs(0.25, 48, 48, seed=10 + seed)
                a = factor * limit.a_star(q, k)
                predicted.append(limit.limit_tv(q, k, a))
                # One draw of m features moves every row of a sequence the
                # same way (about 7% per draw in sqrt(m) TV), so average
                # many draws: 30 per sequence put the mean's standard error
                # under 1%.
                rng = np.random.default_rng(seed)
                sampled.append(np.mean([
                    math.sqrt(m) * limit.sampled_tv(q, k, a, m, rng)
                    for _ in range(30)]))
            with self.subTest(kernel=name):
                # At sigma = 0.25 and m = 4096 the first-order expansion's
                # remainder is about 1% (it falls as m^-1/2); 4% is that,
                # the sampling error, and room.
                self.assertAlmostEqual(np.mean(sampled) / np.mean(predicted),
                                       1.0, delta=0.04)

if __name__ == "__main__":
    unittest.main()
