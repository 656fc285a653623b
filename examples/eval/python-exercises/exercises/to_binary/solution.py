def to_binary(n):
    """The binary digits of n >= 0, without a prefix."""
    if n == 0:
        return "0"
    digits = []
    while n:
        digits.append(str(n % 2))
        n //= 2
    return "".join(reversed(digits))
