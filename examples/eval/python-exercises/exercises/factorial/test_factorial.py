from solution import factorial

assert factorial(0) == 1
assert factorial(1) == 1
assert factorial(5) == 120
assert factorial(20) == 2432902008176640000
print("ok")
