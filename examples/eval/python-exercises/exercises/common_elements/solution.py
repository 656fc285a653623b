def common(*lists):
    """The sorted items that occur in every one of the lists."""
    if not lists:
        return []
    shared = set(lists[0])
    for xs in lists[1:]:
        shared &= set(xs)
    return sorted(shared)
