from solution import longest_common_prefix

assert longest_common_prefix(["flower", "flow", "flight"]) == "fl"
assert longest_common_prefix(["dog", "racecar", "car"]) == ""
assert longest_common_prefix(["same", "same"]) == "same"
assert longest_common_prefix([]) == ""
print("ok")
