#!/usr/bin/env bash
# Oracle for lru-cache: an OrderedDict kept in recency order.
set -euo pipefail
cat > /app/lru.py <<'PY'
"""A least-recently-used cache."""

from collections import OrderedDict


class LRUCache:
    """A fixed-capacity mapping that evicts the least recently used entry."""

    def __init__(self, capacity):
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self._capacity = capacity
        self._items = OrderedDict()

    def get(self, key, default=None):
        """Returns the value for key (marking it used), or default."""
        if key not in self._items:
            return default
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key, value):
        """Stores value under key (marking it used), evicting if full."""
        if self._capacity == 0:
            return
        if key in self._items:
            self._items.move_to_end(key)
        elif len(self._items) >= self._capacity:
            self._items.popitem(last=False)
        self._items[key] = value

    def __len__(self):
        return len(self._items)

    def __contains__(self, key):
        return key in self._items
PY
