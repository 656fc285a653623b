from solution import roman_to_int

CASES = [("I", 1), ("IV", 4), ("IX", 9), ("XIV", 14), ("XL", 40), ("XC", 90),
         ("CD", 400), ("MCMXCIV", 1994), ("MMXXIV", 2024), ("MMMCMXCIX", 3999)]

results = []
for arg, want in CASES:
    got = roman_to_int(arg)
    results.append((arg, want, got, got == want))
passed = sum(1 for r in results if r[3])
with open("report.txt", "w") as f:
    for arg, want, got, good in results:
        f.write("%s %s -> %r (want %r)\n" % ("PASS" if good else "FAIL", arg, got, want))
with open("score.json", "w") as f:
    # By hand: the image's python3-minimal has no json module.
    f.write('{"score": %r, "metrics": {"passed": %d, "total": %d}}\n' % (passed / len(CASES), passed, len(CASES)))

assert passed == len(CASES), "%d of %d checks passed; see report.txt" % (passed, len(CASES))
print("ok")
