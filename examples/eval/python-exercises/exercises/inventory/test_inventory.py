from solution import apply_orders

stock, skipped = apply_orders({"apple": 5, "pear": 1}, [("apple", 3), ("pear", 2), ("apple", 2), ("kiwi", 1)])
assert stock == {"apple": 0, "pear": 1}
assert skipped == [("pear", 2), ("kiwi", 1)]
print("ok")
