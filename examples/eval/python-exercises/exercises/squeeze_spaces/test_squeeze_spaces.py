from solution import squeeze_spaces

assert squeeze_spaces("  a   b\t\tc \n") == "a b c"
assert squeeze_spaces("nothing") == "nothing"
assert squeeze_spaces("   ") == ""
print("ok")
