def merge_counts(a, b):
    """The sum of two dicts of counts: keys of either, values added."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out
