def binary_search(xs, target):
    """The index of target in the sorted list xs, or -1.

    Deliberately buggy (the suite expects this case to fail): the upper
    bound starts one too low, so the last item is never found.
    """
    lo, hi = 0, len(xs) - 2
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
