import math

from solution import isqrt

for n in list(range(2000)) + [10**12, 10**12 - 1, 2**61 - 1]:
    assert isqrt(n) == math.isqrt(n), n
print("ok")
