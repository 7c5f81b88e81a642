"""Prints latency statistics for a few services (uses stats.py)."""
import stats

LATENCIES_MS = {
    "api": [120, 85, 97, 240, 101],
    "search": [300, 120, 180, 90],
    "static": [12],
}

for service, values in LATENCIES_MS.items():
    print(f"{service:8} mean={stats.mean(values):7.2f} median={stats.median(values):7.2f} "
          f"range={stats.value_range(values)}")
