def gcd(a, b):
    """The greatest common divisor of a and b (Euclid)."""
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a
