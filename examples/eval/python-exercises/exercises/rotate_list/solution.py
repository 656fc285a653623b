def rotate(xs, k):
    """xs rotated right by k places (k may exceed the length or be negative)."""
    if not xs:
        return []
    k %= len(xs)
    return xs[-k:] + xs[:-k] if k else list(xs)
