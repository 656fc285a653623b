def lcm(a, b):
    """The least common multiple of two positive integers."""
    x, y = a, b
    while y:
        x, y = y, x % y
    return a // x * b
