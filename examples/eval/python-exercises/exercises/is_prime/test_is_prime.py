from solution import is_prime

PRIMES = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47}

results = []
for n in range(50):
    want = n in PRIMES
    got = is_prime(n)
    results.append((n, want, got, got == want))
passed = sum(1 for r in results if r[3])
with open("report.txt", "w") as f:
    for n, want, got, good in results:
        f.write("%s is_prime(%d) = %r (want %r)\n" % ("PASS" if good else "FAIL", n, got, want))
with open("score.json", "w") as f:
    # By hand: the image's python3-minimal has no json module.
    f.write('{"score": %r, "metrics": {"passed": %d, "total": %d}}\n' % (passed / len(results), passed, len(results)))

assert passed == len(results), "%d of %d checks passed; see report.txt" % (passed, len(results))
print("ok")
