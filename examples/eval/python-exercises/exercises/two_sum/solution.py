def two_sum(xs, target):
    """Indexes (i, j), i < j, of two items of xs that add up to target, or None."""
    seen = {}
    for j, x in enumerate(xs):
        if target - x in seen:
            return (seen[target - x], j)
        seen.setdefault(x, j)
    return None
