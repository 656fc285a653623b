def flatten(xs):
    """All the non-list items of the nested lists xs, in order."""
    out = []
    for x in xs:
        if isinstance(x, list):
            out.extend(flatten(x))
        else:
            out.append(x)
    return out
