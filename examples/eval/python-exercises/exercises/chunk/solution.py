def chunk(xs, size):
    """xs cut into lists of size items; the last may be shorter."""
    return [xs[i:i + size] for i in range(0, len(xs), size)]
