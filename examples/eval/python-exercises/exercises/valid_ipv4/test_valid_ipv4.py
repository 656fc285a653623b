from solution import valid_ipv4

CASES = [("127.0.0.1", True), ("255.255.255.255", True), ("0.0.0.0", True),
         ("256.1.1.1", False), ("1.2.3", False), ("1.2.3.4.5", False),
         ("01.2.3.4", False), ("a.b.c.d", False), ("1..2.3", False), ("", False)]

results = []
for arg, want in CASES:
    got = valid_ipv4(arg)
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
