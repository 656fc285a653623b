def isqrt(n):
    """The largest integer r with r * r <= n, for n >= 0 (Newton's method)."""
    if n < 2:
        return n
    x = n
    y = (x + 1) // 2
    while y < x:
        x = y
        y = (x + n // x) // 2
    return x
