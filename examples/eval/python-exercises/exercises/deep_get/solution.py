def deep_get(d, path, default=None):
    """The value at the dotted path in nested dicts ("a.b.c"), or default when any step is missing."""
    cur = d
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            return default
        cur = cur[key]
    return cur
