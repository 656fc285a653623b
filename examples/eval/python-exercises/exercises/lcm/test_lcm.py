from solution import lcm

assert lcm(4, 6) == 12
assert lcm(7, 3) == 21
assert lcm(10, 10) == 10
assert lcm(1, 99) == 99
print("ok")
