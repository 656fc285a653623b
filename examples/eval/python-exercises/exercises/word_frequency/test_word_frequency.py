from solution import word_frequency

assert word_frequency("a b a") == {"a": 2, "b": 1}
assert word_frequency("") == {}
assert word_frequency("The cat saw the dog, the end.") == {"the": 3, "cat": 1, "saw": 1, "dog": 1, "end": 1}
print("ok")
