def squeeze_spaces(s):
    """Trim s and replace every run of whitespace inside it by one space."""
    return " ".join(s.split())
