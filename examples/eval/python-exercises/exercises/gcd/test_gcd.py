from solution import gcd

assert gcd(12, 18) == 6
assert gcd(17, 5) == 1
assert gcd(0, 7) == 7
assert gcd(-24, 36) == 12
print("ok")
