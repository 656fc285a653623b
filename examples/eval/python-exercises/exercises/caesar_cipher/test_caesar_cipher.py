from solution import caesar

CASES = [
    (("abc", 1), "bcd"),
    (("hello, world", 3), "khoor, zruog"),
    (("xyz", 3), "abc"),
    (("zoo", 1), "app"),
    (("same", 0), "same"),
    (("", 5), ""),
]

results = []
for args, want in CASES:
    got = caesar(*args)
    results.append((args, want, got, got == want))
passed = sum(1 for r in results if r[3])
with open("report.txt", "w") as f:
    for args, want, got, good in results:
        f.write("%s caesar%r = %r (want %r)\n" % ("PASS" if good else "FAIL", args, got, want))
with open("score.json", "w") as f:
    # By hand: the image's python3-minimal has no json module.
    f.write('{"score": %r, "metrics": {"passed": %d, "total": %d}}\n' % (passed / len(CASES), passed, len(CASES)))

assert passed == len(CASES), "%d of %d checks passed; see report.txt" % (passed, len(CASES))
print("ok")
