"""A least-recently-used cache."""


class LRUCache:
    """A fixed-capacity mapping that evicts the least recently used entry."""

    def __init__(self, capacity):
        raise NotImplementedError("LRUCache")

    def get(self, key, default=None):
        """Returns the value for key (marking it used), or default."""
        raise NotImplementedError("get")

    def put(self, key, value):
        """Stores value under key (marking it used), evicting if full."""
        raise NotImplementedError("put")

    def __len__(self):
        raise NotImplementedError("__len__")

    def __contains__(self, key):
        raise NotImplementedError("__contains__")
