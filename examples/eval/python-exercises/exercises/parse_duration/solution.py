UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(s):
    """Seconds in a duration such as "1h30m", "45s" or "2m5s"; ValueError for anything else."""
    if not s:
        raise ValueError("empty duration")
    total = 0
    number = ""
    for c in s:
        if c.isdigit():
            number += c
        elif c in UNITS and number:
            total += int(number) * UNITS[c]
            number = ""
        else:
            raise ValueError("bad duration %r" % s)
    if number:
        raise ValueError("missing unit in %r" % s)
    return total
