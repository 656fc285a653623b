def max_subarray(xs):
    """The largest sum of a non-empty run of consecutive items of xs (Kadane)."""
    best = current = xs[0]
    for x in xs[1:]:
        current = max(x, current + x)
        best = max(best, current)
    return best
