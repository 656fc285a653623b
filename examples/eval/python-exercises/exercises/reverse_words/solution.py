def reverse_words(s):
    """Return the words of s in reverse order, separated by single spaces."""
    return " ".join(reversed(s.split()))
