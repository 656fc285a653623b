from solution import digit_sum

assert digit_sum(0) == 0
assert digit_sum(1234) == 10
assert digit_sum(-987) == 24
print("ok")
