import random

from solution import bubble_sort

assert bubble_sort([3, 1, 2]) == [1, 2, 3]
assert bubble_sort([]) == []
rng = random.Random(7)
for _ in range(50):
    xs = [rng.randint(-100, 100) for _ in range(rng.randint(0, 30))]
    assert bubble_sort(xs) == sorted(xs), xs
print("ok")
