from solution import has_unique_chars

assert has_unique_chars("abc")
assert has_unique_chars("")
assert not has_unique_chars("hello")
print("ok")
