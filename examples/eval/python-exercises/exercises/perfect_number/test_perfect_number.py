from solution import is_perfect

assert [n for n in range(1, 10000) if is_perfect(n)] == [6, 28, 496, 8128]
print("ok")
