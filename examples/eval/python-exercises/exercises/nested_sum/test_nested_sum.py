from solution import nested_sum

assert nested_sum({"a": 1, "b": {"c": 2, "d": {"e": 3}}}) == 6
assert nested_sum({}) == 0
assert nested_sum({"x": -1.5, "y": {"z": 1.5}}) == 0
print("ok")
