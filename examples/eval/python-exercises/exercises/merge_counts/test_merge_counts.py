from solution import merge_counts

assert merge_counts({"x": 1, "y": 2}, {"y": 3, "z": 4}) == {"x": 1, "y": 5, "z": 4}
assert merge_counts({}, {"a": 1}) == {"a": 1}
a = {"k": 1}
merge_counts(a, {"k": 1})
assert a == {"k": 1}, "the input was changed"
print("ok")
