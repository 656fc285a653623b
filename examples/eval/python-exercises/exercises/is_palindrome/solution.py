def is_palindrome(s):
    """Whether s reads the same both ways, ignoring case and anything but letters and digits."""
    kept = [c.lower() for c in s if c.isalnum()]
    return kept == kept[::-1]
