from solution import running_sum

assert running_sum([1, 2, 3, 4]) == [1, 3, 6, 10]
assert running_sum([5, -5, 5]) == [5, 0, 5]
assert running_sum([]) == []
print("ok")
