from solution import matmul

assert matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]
assert matmul([[1, 0], [0, 1]], [[9, 8], [7, 6]]) == [[9, 8], [7, 6]]
assert matmul([[1, 2, 3]], [[1], [2], [3]]) == [[14]]
print("ok")
