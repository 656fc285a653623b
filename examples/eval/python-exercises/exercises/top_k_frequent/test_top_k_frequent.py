from solution import top_k

assert top_k([1, 1, 1, 2, 2, 3], 2) == [1, 2]
assert top_k(["b", "a", "b", "a", "c"], 2) == ["b", "a"]
assert top_k([], 3) == []
print("ok")
