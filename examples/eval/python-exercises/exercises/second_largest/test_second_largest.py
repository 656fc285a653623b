from solution import second_largest

assert second_largest([1, 2, 3]) == 2
assert second_largest([10, 4]) == 4
assert second_largest([7]) is None
assert second_largest([5, 5, 3]) == 3
assert second_largest([2, 2]) is None
print("ok")
