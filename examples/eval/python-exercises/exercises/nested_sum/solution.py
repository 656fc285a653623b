def nested_sum(d):
    """The sum of every number in d, a dict whose values are numbers or such dicts."""
    total = 0
    for v in d.values():
        total += nested_sum(v) if isinstance(v, dict) else v
    return total
