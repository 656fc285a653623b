def dedupe(xs):
    """xs without repeated items, keeping the first occurrence of each, in order."""
    seen = set()
    out = []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
