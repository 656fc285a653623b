def count_vowels(s):
    """How many of the letters of s are vowels (a, e, i, o, u; any case)."""
    return sum(1 for c in s.lower() if c in "aeiou")
