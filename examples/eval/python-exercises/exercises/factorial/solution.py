def factorial(n):
    """n! for n >= 0."""
    result = 1
    for k in range(2, n + 1):
        result *= k
    return result
