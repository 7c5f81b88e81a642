"""Grades /app/lru.py scenario by scenario; reward is the fraction passed."""
import json
import random
import sys

sys.path.insert(0, "/app")


class ReferenceLRU:
    """Obviously-correct model: a list ordered from least to most recent."""

    def __init__(self, capacity):
        self.capacity, self.items = capacity, []

    def get(self, key, default=None):
        for i, (k, v) in enumerate(self.items):
            if k == key:
                self.items.append(self.items.pop(i))
                return v
        return default

    def put(self, key, value):
        present = any(k == key for k, _ in self.items)
        self.items = [(k, v) for k, v in self.items if k != key]
        if self.capacity == 0:
            return
        if not present and len(self.items) >= self.capacity:
            self.items.pop(0)
        self.items.append((key, value))

    def __len__(self):
        return len(self.items)


def expect(problems, name, got, want):
    if got != want:
        problems.append(f"{name}: got {got!r}, want {want!r}")


def basic(lru):
    p = []
    c = lru.LRUCache(2)
    expect(p, "get missing", c.get("a"), None)
    expect(p, "get missing default", c.get("a", 0), 0)
    c.put("a", 1)
    c.put("b", 2)
    expect(p, "get a", c.get("a"), 1)
    expect(p, "get b", c.get("b"), 2)
    expect(p, "len", len(c), 2)
    return p


def eviction_after_get(lru):
    p = []
    c = lru.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.get("a")
    c.put("c", 3)
    expect(p, "b evicted", c.get("b"), None)
    expect(p, "a kept", c.get("a"), 1)
    expect(p, "c kept", c.get("c"), 3)
    return p


def update_refreshes(lru):
    p = []
    c = lru.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("a", 10)
    expect(p, "len after update", len(c), 2)
    c.put("c", 3)
    expect(p, "b evicted", c.get("b"), None)
    expect(p, "a updated", c.get("a"), 10)
    return p


def capacity_edges(lru):
    p = []
    c = lru.LRUCache(0)
    c.put("a", 1)
    expect(p, "zero capacity len", len(c), 0)
    expect(p, "zero capacity get", c.get("a"), None)
    try:
        lru.LRUCache(-1)
        p.append("negative capacity: no ValueError")
    except ValueError:
        pass
    return p


def contains_does_not_refresh(lru):
    p = []
    c = lru.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    expect(p, "a in", "a" in c, True)
    expect(p, "z in", "z" in c, False)
    c.put("c", 3)
    expect(p, "a evicted despite 'in'", "a" in c, False)
    expect(p, "len", len(c), 2)
    return p


def randomized(lru):
    p = []
    rng = random.Random(20260201)
    for capacity in (1, 3, 5):
        model, cache = ReferenceLRU(capacity), lru.LRUCache(capacity)
        for step in range(3000):
            key = rng.randrange(8)
            if rng.random() < 0.5:
                got, want = cache.get(key, -1), model.get(key, -1)
                op = f"get({key})"
            else:
                cache.put(key, step)
                model.put(key, step)
                got, want = len(cache), len(model)
                op = f"put({key}) len"
            if got != want:
                p.append(f"capacity {capacity} step {step} {op}: got {got!r}, want {want!r}")
                break
    return p


SCENARIOS = [basic, eviction_after_get, update_refreshes, capacity_edges, contains_does_not_refresh, randomized]


def main():
    reward_path = sys.argv[1]
    try:
        import lru
    except Exception as err:  # noqa: BLE001
        print(f"FAIL: cannot import /app/lru.py: {err}")
        lru = None
    scores = {}
    for scenario in SCENARIOS:
        try:
            problems = scenario(lru) if lru else ["module not importable"]
        except Exception as err:  # noqa: BLE001
            problems = [f"raised {type(err).__name__}: {err}"]
        scores[scenario.__name__] = 0.0 if problems else 1.0
        print(f"{'PASS' if not problems else 'FAIL'} {scenario.__name__} {problems}")
    reward = sum(scores.values()) / len(scores)
    result = {"reward": reward, "correctness": reward}
    result.update(scores)
    with open(reward_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    print(f"reward {reward}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
