def bubble_sort(xs):
    """A sorted copy of xs, by bubble sort, stopping early when a pass swaps nothing."""
    xs = list(xs)
    for end in range(len(xs) - 1, 0, -1):
        swapped = False
        for i in range(end):
            if xs[i] > xs[i + 1]:
                xs[i], xs[i + 1] = xs[i + 1], xs[i]
                swapped = True
        if not swapped:
            break
    return xs
