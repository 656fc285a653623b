def group_by_length(words):
    """A dict from word length to the words of that length, in their order."""
    out = {}
    for w in words:
        out.setdefault(len(w), []).append(w)
    return out
