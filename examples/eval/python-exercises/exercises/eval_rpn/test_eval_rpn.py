from solution import eval_rpn

assert eval_rpn(["2", "1", "+", "3", "*"]) == 9
assert eval_rpn(["4", "13", "5", "/", "+"]) == 6
assert eval_rpn(["7", "-2", "/"]) == -3
print("ok")
