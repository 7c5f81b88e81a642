"""Grades /app/error_report.json key by key; reward is the fraction correct."""
import json
import sys

EXPECTED = {
    "total_errors": 8,
    "by_component": {"db": 2, "auth": 3, "http": 2, "cron": 1},
    "first_error": "2026-02-10T08:01:12Z",
    "last_error": "2026-02-10T08:29:58Z",
}


def grade(report):
    scores = {}
    for key, want in EXPECTED.items():
        got = report.get(key) if isinstance(report, dict) else None
        ok = got == want and type(got) is type(want)
        scores[key] = 1.0 if ok else 0.0
        print(f"{'PASS' if ok else 'FAIL'} {key}: got {got!r}, want {want!r}")
    if isinstance(report, dict) and set(report) != set(EXPECTED):
        print(f"NOTE extra or missing keys: {sorted(report)}")
    return scores


def main():
    answer, reward_path = sys.argv[1], sys.argv[2]
    try:
        with open(answer, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as err:
        print(f"FAIL: cannot read {answer}: {err}")
        report = None
    scores = grade(report)
    correctness = sum(scores.values()) / len(scores)
    result = {"reward": correctness, "correctness": correctness}
    result.update(scores)
    with open(reward_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    print(f"reward {correctness}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
