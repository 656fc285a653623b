def transpose(rows):
    """The transpose of a rectangular matrix given as a list of rows."""
    return [list(col) for col in zip(*rows)]
