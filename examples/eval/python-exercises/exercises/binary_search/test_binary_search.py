from solution import binary_search

xs = [1, 3, 5, 7, 9, 11]
for i, x in enumerate(xs):
    assert binary_search(xs, x) == i, (x, binary_search(xs, x), i)
assert binary_search(xs, 4) == -1
assert binary_search([], 1) == -1
print("ok")
