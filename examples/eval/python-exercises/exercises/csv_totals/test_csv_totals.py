from solution import column_totals

text = "item,qty,price\napple,3,0.5\npear,2,1.25\n"
assert column_totals(text) == {"qty": 5.0, "price": 1.75}
assert column_totals("a,b\n") == {}
print("ok")
