"""An eval suite defined in Python, run by a schedule.

    PRIMER_URL=... PRIMER_TOKEN=... python3 eval_schedule.py [--every 1h] [--runs 1] [--junit out.xml] [--delete]

The suite is created (or replaced) with its cases and an interval
schedule; the script then waits for the schedule's runs, prints each,
compares the last with the one before, and writes the last one's JUnit XML.
"""

import argparse

import primer

parser = argparse.ArgumentParser()
parser.add_argument("--suite", default="py-exercises")
parser.add_argument("--template", default="default")
parser.add_argument("--every", default="1h", help="the schedule's interval (a Go duration)")
parser.add_argument("--runs", type=int, default=1, help="scheduled runs to wait for")
parser.add_argument("--junit", default="results.xml")
parser.add_argument("--delete", action="store_true", help="delete the suite at the end")
args = parser.parse_args()

FIZZBUZZ = "def fizzbuzz(n):\n    return 'Fizz' * (n % 3 == 0) + 'Buzz' * (n % 5 == 0) or str(n)\n"
cases = [
    primer.Case(
        id="fizzbuzz",
        files={"fizzbuzz.py": FIZZBUZZ},
        command=["python3", "-c", "from fizzbuzz import fizzbuzz; print(fizzbuzz(15), fizzbuzz(7))"],
        expect=primer.Expect(stdout_contains=["FizzBuzz 7"]),
        labels={"level": "easy"},
    ),
    primer.Case(
        id="score",
        command="python3 -c 'import json; json.dump({\"score\": 0.9}, open(\"score.json\", \"w\"))'",
        score_file="score.json",
        labels={"level": "easy"},
    ),
    primer.Case(
        id="sorted",
        files={"check.py": "assert sorted([3, 1, 2]) == [1, 2, 3]\nprint('ok')\n"},
        command=["python3", "check.py"],
        expect=primer.Expect(stdout_matches=r"(?m)^ok$"),
        labels={"level": "medium"},
    ),
]

with primer.Client() as client:
    suite = client.suites.apply(args.suite, cases, template_id=args.template, concurrency=3,
                                schedule=primer.Schedule(interval=args.every, overlap="skip"))
    print(f"suite {suite.id}: {suite.case_count} cases, every {args.every}")
    runs = client.runs.wait_for(suite.id, args.runs, timeout=3600, since=suite.updated_at)
    for run in reversed(runs[: args.runs]):
        print(f"run {run.id} ({run.trigger}): {run.status}, pass rate {run.refresh().progress.pass_rate:.0%}")
    last = runs[0]
    for r in last.results():
        print(f"  {r.case_id:10} {r.verdict:5} {r.duration_ms} ms" + (f" score {r.score}" if r.score is not None else ""))
    if len(runs) > 1:
        cmp = last.compare(runs[1])
        print(f"against {runs[1].id}: {len(cmp.regressions)} regressions, {len(cmp.fixes)} fixes, {cmp.unchanged} unchanged")
    with open(args.junit, "w") as f:
        f.write(last.junit())
    print(f"wrote {args.junit}")
    if args.delete:
        suite.delete()
