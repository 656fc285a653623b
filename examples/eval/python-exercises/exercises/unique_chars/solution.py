def has_unique_chars(s):
    """Whether no character occurs twice in s."""
    return len(set(s)) == len(s)
