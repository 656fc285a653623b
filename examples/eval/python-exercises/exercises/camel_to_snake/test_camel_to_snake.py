from solution import camel_to_snake

CASES = [
    ("camelCase", "camel_case"),
    ("PascalCase", "pascal_case"),
    ("already_snake", "already_snake"),
    ("HTTPServer", "http_server"),
    ("getHTTPResponseCode", "get_http_response_code"),
    ("x", "x"),
]

results = []
for arg, want in CASES:
    got = camel_to_snake(arg)
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
