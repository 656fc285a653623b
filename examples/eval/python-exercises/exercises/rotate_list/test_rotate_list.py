from solution import rotate

assert rotate([1, 2, 3, 4, 5], 2) == [4, 5, 1, 2, 3]
assert rotate([1, 2, 3], 0) == [1, 2, 3]
assert rotate([1, 2, 3], 4) == [3, 1, 2]
assert rotate([1, 2, 3], -1) == [2, 3, 1]
assert rotate([], 3) == []
print("ok")
