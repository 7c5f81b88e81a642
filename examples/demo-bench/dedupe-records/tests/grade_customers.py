"""Grades /app/customers_clean.csv row by row; reward is the fraction correct.

Rows are compared in order; extra rows count against the score, so the reward
is matched / max(expected rows, answered rows). A wrong header scores 0.
"""
import csv
import json
import sys


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [row for row in csv.reader(f) if row]


def main():
    answer, reward_path = sys.argv[1], sys.argv[2]
    want = read_rows("/tests/expected_customers.csv")
    try:
        got = read_rows(answer)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        print(f"FAIL: cannot read {answer}: {err}")
        got = []
    header_ok = bool(got) and got[0] == want[0]
    matched = 0
    if header_ok:
        for i, row in enumerate(want[1:], start=1):
            ok = i < len(got) and got[i] == row
            matched += ok
            print(f"{'PASS' if ok else 'FAIL'} row {i}: want {row}, got {got[i] if i < len(got) else None}")
    else:
        print(f"FAIL header: want {want[0]}, got {got[0] if got else None}")
    expected_rows = len(want) - 1
    answered_rows = max(len(got) - 1, 0)
    reward = matched / max(expected_rows, answered_rows) if header_ok else 0.0
    with open(reward_path, "w", encoding="utf-8") as f:
        json.dump({
            "reward": reward,
            "correctness": reward,
            "rows_matched": matched,
            "rows_expected": expected_rows,
            "rows_answered": answered_rows,
        }, f)
    print(f"reward {reward}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
