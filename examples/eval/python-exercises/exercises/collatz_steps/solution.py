def collatz_steps(n):
    """How many Collatz steps (n/2 if even, 3n+1 if odd) take n >= 1 to 1."""
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps
