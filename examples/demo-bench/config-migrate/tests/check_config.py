"""Compares /app/config.json with the expected document, types included."""
import json
import sys


def diff(want, got, path="$"):
    """Yields a description of every place where got differs from want."""
    if type(want) is not type(got):
        yield f"{path}: got {got!r} ({type(got).__name__}), want {want!r} ({type(want).__name__})"
    elif isinstance(want, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                yield f"{path}.{key}: missing"
            elif key not in want:
                yield f"{path}.{key}: unexpected"
            else:
                yield from diff(want[key], got[key], f"{path}.{key}")
    elif want != got:
        yield f"{path}: got {got!r}, want {want!r}"


def main():
    with open("/tests/expected_config.json", encoding="utf-8") as f:
        want = json.load(f)
    try:
        with open("/app/config.json", encoding="utf-8") as f:
            got = json.load(f)
    except (OSError, ValueError) as err:
        print(f"FAIL: cannot read /app/config.json: {err}")
        return 1
    problems = list(diff(want, got))
    for problem in problems:
        print("FAIL", problem)
    if problems:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
