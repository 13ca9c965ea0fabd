"""The statistics of a row's samples (median, p95, two modes) and how a figure is written."""
import math
import statistics


def stats(samples):
    s = sorted(samples)
    if not s:
        return None
    return {"n": len(s), "median": int(statistics.median(s)), "mean": int(statistics.fmean(s)),
            "min": s[0], "max": s[-1], "p95": s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]}


def fmt(ns):
    if ns is None:
        return "–"
    ns = float(ns)
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.0f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def two_modes(bare_samples, ice_samples):
    """Splits the pooled samples of a row in two modes (two-means on their logarithm) and, if
    they are two (each at least 15% of the samples, the slow one's median at least 1.5x the fast
    one's), returns per tool the share in the slow mode and each mode's median; else None."""
    pooled = sorted(v for v in bare_samples + ice_samples if v > 0)
    if len(pooled) < 20:
        return None
    logs = [math.log(v) for v in pooled]
    lo, hi = logs[len(logs) // 4], logs[3 * len(logs) // 4]
    for _ in range(50):
        cut = (lo + hi) / 2
        fast, slow = [x for x in logs if x <= cut], [x for x in logs if x > cut]
        if not fast or not slow:
            return None
        lo, hi = statistics.fmean(fast), statistics.fmean(slow)
    cut = math.exp((lo + hi) / 2)
    fast_all, slow_all = [v for v in pooled if v <= cut], [v for v in pooled if v > cut]
    if min(len(fast_all), len(slow_all)) < 0.15 * len(pooled) or statistics.median(slow_all) < 1.5 * statistics.median(fast_all):
        return None
    out = {"cut": cut}
    for tool, samples in (("bare", bare_samples), ("ice", ice_samples)):
        fast, slow = [v for v in samples if v <= cut], [v for v in samples if v > cut]
        if not fast or not slow:
            return None
        out[tool] = {"n": len(samples), "slow": len(slow), "fast_median": statistics.median(fast),
                     "slow_median": statistics.median(slow)}
    return out
