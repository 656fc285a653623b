from solution import max_subarray

CASES = [([-2, 1, -3, 4, -1, 2, 1, -5, 4], 6), ([1], 1), ([-3, -1, -2], -1),
         ([5, 4, -1, 7, 8], 23), ([0, 0, 0], 0), ([2, -1, 2, -1, 2], 4)]

results = []
for arg, want in CASES:
    got = max_subarray(arg)
    results.append((arg, want, got, got == want))
passed = sum(1 for r in results if r[3])
with open("report.txt", "w") as f:
    for arg, want, got, good in results:
        f.write("%s %r -> %r (want %r)\n" % ("PASS" if good else "FAIL", arg, got, want))
with open("score.json", "w") as f:
    # By hand: the image's python3-minimal has no json module.
    f.write('{"score": %r, "metrics": {"passed": %d, "total": %d}}\n' % (passed / len(CASES), passed, len(CASES)))

assert passed == len(CASES), "%d of %d checks passed; see report.txt" % (passed, len(CASES))
print("ok")
