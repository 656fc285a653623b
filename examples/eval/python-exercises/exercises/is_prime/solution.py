def is_prime(n):
    """Whether n is a prime number.

    Deliberately buggy (the suite expects this case to fail): the loop stops
    before the square root, so 4, 9, 25, 49 ... are called prime.
    """
    if n < 2:
        return False
    d = 2
    while d * d < n:
        if n % d == 0:
            return False
        d += 1
    return True
