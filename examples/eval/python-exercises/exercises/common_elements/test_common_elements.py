from solution import common

assert common([1, 2, 3, 4], [2, 4, 6], [4, 2, 0]) == [2, 4]
assert common([1, 2], [3]) == []
assert common([5, 5, 1]) == [1, 5]
assert common() == []
print("ok")
