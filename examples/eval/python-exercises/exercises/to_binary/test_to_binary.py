from solution import to_binary

assert to_binary(0) == "0"
assert to_binary(5) == "101"
assert to_binary(255) == "11111111"
assert all(to_binary(n) == format(n, "b") for n in range(1000))
print("ok")
