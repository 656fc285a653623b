from solution import dedupe

assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]
assert dedupe(["a", "a", "a"]) == ["a"]
assert dedupe([]) == []
print("ok")
