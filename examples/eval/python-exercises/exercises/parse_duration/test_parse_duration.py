from solution import parse_duration

assert parse_duration("45s") == 45
assert parse_duration("1h30m") == 5400
assert parse_duration("2m5s") == 125
for bad in ["", "10", "h", "1x", "1h-2m"]:
    try:
        parse_duration(bad)
    except ValueError:
        pass
    else:
        raise AssertionError("no error for %r" % bad)
print("ok")
