#!/usr/bin/env python3
"""Independent reference values for pkg/stats tests (python3 standard library
only: no code of gauntlet is used). Run: python3 pkg/stats/testdata/reference.py
The tests pin the numbers this prints."""
from fractions import Fraction
from math import comb, sqrt
from statistics import NormalDist

Z = NormalDist().inv_cdf(0.975)

def wilson(p, n):
    z2 = Z * Z
    d = 1 + z2 / n
    c = (p + z2 / (2 * n)) / d
    h = Z / d * sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, c - h), min(1.0, c + h)

def rate_ci(xs, attempts):
    t = len(xs)
    p = sum(xs) / t
    v = sum((x - p) ** 2 for x in xs) / (t * t)
    n_eff = t if v <= 1e-15 else max(t, min(p * (1 - p) / v, max(attempts, t)))
    return p, n_eff, wilson(p, n_eff)

# PCG-DXSM as math/rand/v2 implements it (128-bit LCG, DXSM output).
M64 = (1 << 64) - 1
MUL = (2549297995355413924 << 64) | 4865540595714422341
INC = (6364136223846793005 << 64) | 1442695040888963407

class PCG:
    def __init__(self, hi, lo):
        self.state = (hi << 64) | lo
    def uint64(self):
        self.state = (self.state * MUL + INC) & ((1 << 128) - 1)
        hi, lo = self.state >> 64, self.state & M64
        hi ^= hi >> 32
        hi = (hi * 0xda942042e4dd58b5) & M64
        hi ^= hi >> 48
        hi = (hi * (lo | 1)) & M64
        return hi

SEED = (int.from_bytes(b"gauntlet", "big"), int.from_bytes(b"bootstra", "big"))

def quantile7(s, q):
    h = q * (len(s) - 1)
    lo = int(h)
    if lo + 1 >= len(s):
        return s[-1]
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo])

def bootstrap(xs, b=1000):
    rng = PCG(*SEED)
    n = len(xs)
    means = []
    for _ in range(b):
        total = 0.0
        for _ in range(n):
            total += xs[(rng.uint64() * n) >> 64]
        means.append(total / n)
    means.sort()
    return quantile7(means, 0.025), quantile7(means, 0.975)

def holm(ps):
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out, run = [0.0] * m, 0.0
    for r, i in enumerate(order):
        run = max(run, min(1.0, (m - r) * ps[i]))
        out[i] = run
    return out

def variance_parts(ns, cs):
    w = [Fraction(c * (n - c), n * (n - 1)) for n, c in zip(ns, cs)]
    rates = [Fraction(c, n) for n, c in zip(ns, cs)]
    t = len(ns)
    mean = sum(rates) / t
    s2 = sum((r - mean) ** 2 for r in rates) / (t - 1)
    between = max(Fraction(0), s2 - sum(wi / n for wi, n in zip(w, ns)) / t)
    return between, sum(w) / t

if __name__ == "__main__":
    print("z", repr(Z))
    for p, n in [(0, 10), (1, 10), (0.5, 10), (0.9, 20), (1, 15), (14 / 15, 15)]:
        print("wilson", p, n, wilson(p, n))
    for name, xs, att in [
        ("ten 0/1 half", [1] * 5 + [0] * 5, 10),
        ("all pass 3 attempts", [1.0] * 15, 45),
        ("thirds", [1 / 3, 2 / 3, 1, 0, 1 / 3, 2 / 3], 18),
        ("constant third", [1 / 3] * 4, 12),
    ]:
        print("rate_ci", name, rate_ci(xs, att))
    cost = [0.12, 0.08, 0.10, 0.95, 0.11, 0.09, 2.40, 0.07, 0.13, 0.10]
    print("bootstrap cost", bootstrap(cost))
    print("bootstrap two", bootstrap([1.0, 3.0]))
    print("pcg first", PCG(1, 2).uint64(), PCG(*SEED).uint64())
    print("holm", holm([0.01, 0.04, 0.03, 0.005, 0.20]))
    print("holm ties", holm([0.02, 0.02, 0.5]))
    for k in range(1, 6):
        print("passhat 5 3", k, Fraction(comb(3, k), comb(5, k)) if k <= 5 else None)
    print("passhat 10 7 4", Fraction(comb(7, 4), comb(10, 4)))
    print("passhat 100 90 10", Fraction(comb(90, 10), comb(100, 10)), float(Fraction(comb(90, 10), comb(100, 10))))
    b, w = variance_parts([3, 3, 3, 3], [0, 1, 2, 3])
    print("variance_parts", b, w, float(b), float(w))
    b, w = variance_parts([2, 4, 3], [1, 4, 0])
    print("variance_parts unequal", b, w, float(b), float(w))

    # pkg/leaderboard's tests (per-task rates written out by hand there).
    print("lb errored pass1", rate_ci([2 / 3, 0, 1], 9))
    print("lb errored pass@2/3", rate_ci([1, 0, 1], 9))
    print("lb errored pass^2", rate_ci([1 / 3, 0, 1], 9))
    print("lb errored pass^3", rate_ci([0, 0, 1], 9))
    print("lb unequal pass1", rate_ci([1 / 2, 1 / 4], 6))
    print("lb unequal pass@2", rate_ci([1, 1 / 2], 6))
    print("lb unequal pass^2", rate_ci([0, 0], 6))
    print("lb constant", rate_ci([1, 1], 2))
    print("lb usage cost", bootstrap([2.0, 4.0]), "tokens", bootstrap([240.0, 60.0]))
    print("lb categories web", rate_ci([1, 1 / 2], 4))
    print("lb platform excluded", rate_ci([1, 0, 1 / 2], 5), "strict", rate_ci([1 / 3, 0, 1 / 2, 0], 9))

    # Two-sided p of the paired t-test by Simpson integration of the t
    # density (pkg/leaderboard's Holm board test: t = −√6, df = 9).
    from math import gamma, pi
    def t_sf(t, df, steps=200000):
        c = gamma((df + 1) / 2) / (sqrt(df * pi) * gamma(df / 2))
        f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)
        h = t / steps
        s = f(0) + f(t) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, steps))
        return 0.5 - s * h / 3
    p = 2 * t_sf(sqrt(6), 9)
    print("lb holm p", p, "adjusted", min(1, 2 * p))

    # cmd/gauntlet's tests (testdata/small.jsonl; the Harbor job test).
    print("cli alpha", rate_ci([1, 1, 1, 0.5], 8), "beta", rate_ci([1, 0.5, 1, 0.5], 8), "nop", rate_ci([0, 0, 0, 0], 8))
    print("cli jobdir", rate_ci([1, 0.5], 4))

    # t quantiles by bisection on the integrated density (MinDetectableDiff).
    def t_quantile(q, df):
        lo, hi = 0.0, 10.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if 1 - t_sf(mid, df, 20000) < q:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2
    print("t 0.80 9", t_quantile(0.80, 9), "t 0.80 30", t_quantile(0.80, 30), "t 0.975 30", t_quantile(0.975, 30))

    # Exact coverage of Wilson and of the t interval over tasks (clipped),
    # one attempt per task (pkg/stats's coverage test).
    from math import comb
    def t_interval(x, n):
        p = x / n
        sd = sqrt(n / (n - 1) * p * (1 - p))
        h = t_quantile(0.975, n - 1) * sd / sqrt(n)
        return max(0.0, p - h), min(1.0, p + h)
    for n, p in [(10, 0.8), (10, 0.95), (20, 0.95), (30, 0.98)]:
        cw = ct = 0.0
        for x in range(n + 1):
            pr = comb(n, x) * p ** x * (1 - p) ** (n - x)
            lo, hi = wilson(x / n, n)
            cw += pr if lo <= p <= hi else 0
            lo, hi = t_interval(x, n)
            ct += pr if lo <= p <= hi else 0
        print("coverage", n, p, round(cw, 4), round(ct, 4))
