def invert(d):
    """A dict from each value of d to the sorted list of keys that have it."""
    out = {}
    for k, v in d.items():
        out.setdefault(v, []).append(k)
    return {v: sorted(ks) for v, ks in out.items()}
