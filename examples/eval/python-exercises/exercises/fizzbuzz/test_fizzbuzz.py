from solution import fizzbuzz

words = fizzbuzz(100)
results = []
for i in range(1, 101):
    if i % 15 == 0:
        want = "FizzBuzz"
    elif i % 3 == 0:
        want = "Fizz"
    elif i % 5 == 0:
        want = "Buzz"
    else:
        want = str(i)
    got = words[i - 1] if i <= len(words) else None
    results.append((i, want, got, got == want))
passed = sum(1 for r in results if r[3])
with open("report.txt", "w") as f:
    for i, want, got, good in results:
        f.write("%s %d -> %r (want %r)\n" % ("PASS" if good else "FAIL", i, got, want))
with open("score.json", "w") as f:
    # By hand: the image's python3-minimal has no json module.
    f.write('{"score": %r, "metrics": {"passed": %d, "total": %d}}\n' % (passed / len(results), passed, len(results)))

assert len(words) == 100
assert passed == len(results), "%d of %d checks passed; see report.txt" % (passed, len(results))
print("ok")
