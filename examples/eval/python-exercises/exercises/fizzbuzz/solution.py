def fizzbuzz(n):
    """The fizzbuzz words for 1..n: Fizz for multiples of 3, Buzz of 5, FizzBuzz of both."""
    out = []
    for i in range(1, n + 1):
        word = ("Fizz" if i % 3 == 0 else "") + ("Buzz" if i % 5 == 0 else "")
        out.append(word or str(i))
    return out
