from solution import fib

assert [fib(n) for n in range(10)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
assert fib(90) == 2880067194370816120
print("ok")
