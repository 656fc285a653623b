from solution import group_by_length

assert group_by_length(["a", "bb", "cc", "d", "eee"]) == {1: ["a", "d"], 2: ["bb", "cc"], 3: ["eee"]}
assert group_by_length([]) == {}
print("ok")
