def second_largest(xs):
    """The second largest distinct value of xs, or None if there is none.

    Deliberately buggy (the suite expects this case to fail): it sorts and
    takes the second item, so [5, 5, 3] gives 5 instead of 3.
    """
    if len(xs) < 2:
        return None
    return sorted(xs, reverse=True)[1]
