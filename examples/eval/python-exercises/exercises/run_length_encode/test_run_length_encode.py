from solution import rle

assert rle("aaabcc") == "a3b1c2"
assert rle("abc") == "a1b1c1"
assert rle("zzzzzzzzzzzz") == "z12"
assert rle("") == ""
print("ok")
