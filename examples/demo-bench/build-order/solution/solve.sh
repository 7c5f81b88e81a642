#!/usr/bin/env bash
# Oracle for build-order: Kahn's algorithm with a min-heap of ready names.
set -euo pipefail
cat > /app/build_order.py <<'PY'
"""Prints the alphabetically-smallest topological build order of a deps file."""
import heapq
import sys


def parse(path):
    deps = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            target, _, rest = text.partition(":")
            target = target.strip()
            deps.setdefault(target, set()).update(rest.split())
            for dep in rest.split():
                deps.setdefault(dep, set())
    return deps


def order(deps):
    waiting = {name: len(d) for name, d in deps.items()}
    users = {name: [] for name in deps}
    for name, d in deps.items():
        for dep in d:
            users[dep].append(name)
    ready = [name for name, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        name = heapq.heappop(ready)
        result.append(name)
        for user in users[name]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    return result if len(result) == len(deps) else None


def main():
    built = order(parse(sys.argv[1]))
    if built is None:
        print("cycle detected", file=sys.stderr)
        return 2
    print("\n".join(built))
    return 0


if __name__ == "__main__":
    sys.exit(main())
PY
