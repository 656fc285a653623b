def top_k(xs, k):
    """The k most frequent items of xs, most frequent first; ties by first appearance."""
    counts = {}
    first = {}
    for i, x in enumerate(xs):
        counts[x] = counts.get(x, 0) + 1
        first.setdefault(x, i)
    return sorted(counts, key=lambda x: (-counts[x], first[x]))[:k]
