def running_sum(xs):
    """The prefix sums of xs: [1, 2, 3] -> [1, 3, 6]."""
    out = []
    total = 0
    for x in xs:
        total += x
        out.append(total)
    return out
