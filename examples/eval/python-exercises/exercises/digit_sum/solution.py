def digit_sum(n):
    """The sum of the decimal digits of the integer n (sign ignored)."""
    return sum(int(c) for c in str(abs(n)))
