from solution import reverse_words

assert reverse_words("hello world") == "world hello"
assert reverse_words("  one   two three ") == "three two one"
assert reverse_words("single") == "single"
assert reverse_words("") == ""
print("ok")
