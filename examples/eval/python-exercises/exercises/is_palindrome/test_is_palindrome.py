from solution import is_palindrome

assert is_palindrome("racecar")
assert is_palindrome("A man, a plan, a canal: Panama")
assert is_palindrome("")
assert not is_palindrome("python")
assert not is_palindrome("ab")
print("ok")
