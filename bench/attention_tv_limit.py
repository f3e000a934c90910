#!/usr/bin/env python3
"""How far FAVOR++ can lower attention's total-variation error below
FAVOR+'s (issue 15), as the feature count m grows: the closed-form limit
m -> infinity, and Monte Carlo at growing m, both in float64 numpy (an
implementation independent of server/attention/).

    /usr/bin/python3 bench/attention_tv_limit.py

The estimator. For x' = d^-1/4 x and omega ~ N(0, I_d) (iid features),

    f_A(omega, x) = exp(A |omega|^2 + B omega.x' - |x'|^2 / 2),  B = sqrt(1 - 4A)

times FAVOR++'s D = (1 - 4A)^(d/4), which makes E[f(q) f(k)] = exp(q'.k')
(D and the m^-1/2 cancel in a normalised row; A = 0 is FAVOR+). A row of attention is estimated by

    P^_j = N_j / sum_l N_l,   N_j = (1/m) sum_r f_A(omega_r, q) f_A(omega_r, k_j),

with no stabiliser (no shift, epsilon = 0).

The limit. Write S = sum_l exp(q'.k'_l) and P_j = exp(q'.k'_j) / S. To first
order, P^_j - P_j = (1/(m S)) sum_r Y_r with

    Y = f_A(omega, q) (f_A(omega, k_j) - P_j sum_l f_A(omega, k_l)),  E[Y] = 0,

so sqrt(m) (P^_j - P_j) tends to a normal law with standard deviation
sqrt(E[Y^2]) / S, and sqrt(m) E[TV] to (1/2) sqrt(2/pi) sum_j sqrt(E[Y^2]) / S.
E[Y^2] = c^T M c with c = e_j - P_j 1 and the Gaussian integral

    M_ab = E[f(q)^2 f(k_a) f(k_b)]
         = D^4 (1 - 8A)^(-d/2) exp(-|q'|^2 - |k'_a|^2/2 - |k'_b|^2/2
                               + beta |2q' + k'_a + k'_b|^2 / 2),
    beta = B^2 / (1 - 8A)   (finite for A < 1/8).

A per sequence is A* = (1 - 2 rho - sqrt((2 rho + 1)^2 + 8 rho)) / 16, rho =
(mean|q'|^2 + mean|k'|^2 + 2 mean(q').mean(k')) / d, as in Attend.

Prints two Markdown tables: the limit of sqrt(m) TV for FAVOR+, for FAVOR++
at A* and at the best A = c A* of a grid, per sigma; and Monte Carlo
sqrt(m) TV at growing m beside that limit.
"""

import argparse
import math
import sys

import numpy as np

D = 64


def a_star(q, k):
    """FAVOR++'s A* for one sequence of scaled queries q and keys k."""
    rho = ((q * q).sum(1).mean() + (k * k).sum(1).mean() +
           2.0 * q.mean(0) @ k.mean(0)) / q.shape[1]
    return (1.0 - 2.0 * rho - math.sqrt((2.0 * rho + 1.0) ** 2 + 8.0 * rho)) / 16.0


def second_moments(q, k, a):
    """E[Y^2] for every query i and key j, as log-scaled pieces: returns
    (var, log_scale) with E[Y_ij^2] = var[i, j] * exp(log_scale[i])."""
    if not a < 0.125:
        raise ValueError("the variance is infinite for A >= 1/8")
    d = q.shape[1]
    beta = (1.0 - 4.0 * a) / (1.0 - 8.0 * a)
    qn = (q * q).sum(1)
    kn = (k * k).sum(1)
    scores = q @ k.T
    # M_ab = exp(pre_i) u_ia u_ib exp(beta k_a.k_b): expand |2q + k_a + k_b|^2.
    log_u = -kn[None, :] / 2 + beta * (kn[None, :] / 2 + 2.0 * scores)
    shift = log_u.max(1, keepdims=True)
    u = np.exp(log_u - shift)
    e = np.exp(beta * (k @ k.T))
    # D^4 = (1 - 4A)^d: Y is in units of the unbiased features (with D), so
    # that Y / S is in units of attention weights.
    pre = (d * math.log(1.0 - 4.0 * a) - (d / 2) * math.log(1.0 - 8.0 * a) -
           qn + 2.0 * beta * qn)
    row_sums = u * (u @ e)                      # sum_b M_jb, per i, j
    total = row_sums.sum(1, keepdims=True)      # sum_ab M_ab, per i
    diag = u * u * np.diag(e)[None, :]          # M_jj
    p = softmax_rows(scores)
    var = diag - 2.0 * p * row_sums + p * p * total
    return np.maximum(var, 0.0), pre + 2.0 * shift[:, 0]


def softmax_rows(scores):
    p = np.exp(scores - scores.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def limit_sd(q, k, a):
    """lim sqrt(m) sd(P^_ij) for m iid features, per (i, j)."""
    var, log_scale = second_moments(q, k, a)
    scores = q @ k.T
    top = scores.max(1)
    log_s = top + np.log(np.exp(scores - top[:, None]).sum(1))
    return np.sqrt(var) * np.exp(log_scale / 2 - log_s)[:, None]


def limit_tv(q, k, a):
    """lim sqrt(m) E[TV], averaged over rows."""
    return float((0.5 * math.sqrt(2.0 / math.pi) *
                  limit_sd(q, k, a).sum(1)).mean())


def features(x, omega, a):
    b = math.sqrt(1.0 - 4.0 * a)
    return np.exp(a * (omega * omega).sum(1)[None, :] + b * (x @ omega.T) -
                  0.5 * (x * x).sum(1)[:, None])


def sampled_tv(q, k, a, m, rng, chunk=8192):
    """TV of the estimated rows against softmax, m iid features."""
    numer = np.zeros((q.shape[0], k.shape[0]))
    for start in range(0, m, chunk):
        omega = rng.standard_normal((min(chunk, m - start), q.shape[1]))
        numer += features(q, omega, a) @ features(k, omega, a).T
    estimate = numer / numer.sum(1, keepdims=True)
    return float(0.5 * np.abs(estimate - softmax_rows(q @ k.T)).sum(1).mean())


def draw(sigma, length, rng):
    """Queries and keys with N(0, sigma^2) entries, scaled by d^-1/4."""
    scale = sigma / D ** 0.25
    return (rng.standard_normal((length, D)) * scale,
            rng.standard_normal((length, D)) * scale)


def mean_sd(values):
    return float(np.mean(values)), float(np.std(values))


def limit_table(sigmas, length, seeds, multiples):
    print("#### sqrt(m) TV as m -> infinity (iid features, closed form)\n")
    print(f"d = {D}, L = {length}, {seeds} seeds; FAVOR++ at A = c·A*, "
          f"c in {{{', '.join(f'{c:g}' for c in multiples)}}}.\n")
    print("| σ | A* | FAVOR+ | FAVOR++ (A*) | FAVOR+ / FAVOR++ | best c | "
          "FAVOR+ / best |")
    print("| --: | --: | --: | --: | --: | --: | --: |")
    for sigma in sigmas:
        per_c = {c: [] for c in multiples}
        stars = []
        for seed in range(seeds):
            q, k = draw(sigma, length, np.random.default_rng(seed))
            star = a_star(q, k)
            stars.append(star)
            for c in multiples:
                per_c[c].append(limit_tv(q, k, c * star))
        plus = np.mean(per_c[0.0])
        best = min(multiples, key=lambda c: np.mean(per_c[c]))
        print(f"| {sigma:g} | {np.mean(stars):.4f} | {plus:.3g} | "
              f"{np.mean(per_c[1.0]):.3g} | {plus / np.mean(per_c[1.0]):.3f} | "
              f"{best:g} | {plus / np.mean(per_c[best]):.3f} |")


def sampled_table(sigma, length, seeds, feature_counts):
    print(f"\n#### sqrt(m) TV at σ = {sigma:g}, sampled (iid features, ε = 0), "
          "against the limit\n")
    print(f"d = {D}, L = {length}, {seeds} seeds; mean ± standard deviation "
          "over seeds.\n")
    print("| m | FAVOR+ | FAVOR++ (A*) | FAVOR+ / FAVOR++ |")
    print("| --: | --: | --: | --: |")
    inputs = []
    for seed in range(seeds):
        q, k = draw(sigma, length, np.random.default_rng(seed))
        inputs.append((q, k, a_star(q, k)))
    for m in feature_counts:
        plus, plus_plus = [], []
        for seed, (q, k, star) in enumerate(inputs):
            plus.append(math.sqrt(m) * sampled_tv(
                q, k, 0.0, m, np.random.default_rng([seed, m, 0])))
            plus_plus.append(math.sqrt(m) * sampled_tv(
                q, k, star, m, np.random.default_rng([seed, m, 1])))
        p, pp = mean_sd(plus), mean_sd(plus_plus)
        print(f"| {m} | {p[0]:.3f} ± {p[1]:.2g} | {pp[0]:.3f} ± {pp[1]:.2g} | "
              f"{p[0] / pp[0]:.3f} |", flush=True)
    plus = np.mean([limit_tv(q, k, 0.0) for q, k, _ in inputs])
    plus_plus = np.mean([limit_tv(q, k, star) for q, k, star in inputs])
    print(f"| ∞ (closed form) | {plus:.3f} | {plus_plus:.3f} | "
          f"{plus / plus_plus:.3f} |")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sigmas", default="0.25,0.5,1",
                        help="standard deviations of the entries, for the limit")
    parser.add_argument("--sigma", type=float, default=0.5,
                        help="the standard deviation of the sampled table")
    parser.add_argument("--length", type=int, default=256, help="L")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--m", default="256,1024,4096,16384,65536",
                        help="feature counts of the sampled table")
    args = parser.parse_args(argv)
    multiples = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0]
    limit_table([float(s) for s in args.sigmas.split(",")], args.length,
                args.seeds, multiples)
    sampled_table(args.sigma, args.length, args.seeds,
                  [int(m) for m in args.m.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
