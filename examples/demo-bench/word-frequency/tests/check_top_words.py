"""Checks /app/top_words.txt against the top ten words of the pristine input."""
import collections
import re
import sys


def expected_lines(text):
    counts = collections.Counter(w.lower() for w in re.findall(r"[A-Za-z]+", text))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    return [f"{word} {count}\n" for word, count in ranked]


def main():
    source, answer = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        want = expected_lines(f.read())
    try:
        with open(answer, encoding="utf-8") as f:
            got = f.readlines()
    except OSError as err:
        print(f"FAIL: cannot read {answer}: {err}")
        return 1
    if got != want:
        print("FAIL: top words differ")
        print("want:", "".join(want), sep="\n")
        print("got:", "".join(got), sep="\n")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
