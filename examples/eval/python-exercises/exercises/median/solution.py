def median(xs):
    """The median of a non-empty list of numbers (the mean of the middle two for an even count)."""
    s = sorted(xs)
    mid = len(s) // 2
    if len(s) % 2:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2
