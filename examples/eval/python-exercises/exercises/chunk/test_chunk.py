from solution import chunk

assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
assert chunk([1, 2, 3], 3) == [[1, 2, 3]]
assert chunk([], 4) == []
print("ok")
