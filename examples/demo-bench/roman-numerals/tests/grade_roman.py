"""Grades /app/roman.py in four groups; reward is the fraction of groups passed."""
import json
import sys

sys.path.insert(0, "/app")

DIGITS = [
    ["", "M", "MM", "MMM"],
    ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"],
    ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"],
    ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"],
]
INVALID = ["", "IIII", "VV", "IC", "IL", "XM", "VX", "MMMM", "iv", "XIIV", "CMC", "DD", "ABC", "IXI", " X"]


def reference(n):
    """Canonical numeral built digit by digit (independent of the solution)."""
    return "".join(table[int(d)] for table, d in zip(DIGITS, f"{n:04d}"))


def raises_value_error(fn, arg):
    try:
        fn(arg)
    except ValueError:
        return True
    except Exception:  # noqa: BLE001 - any other outcome is a failure
        return False
    return False


def group(name, check):
    try:
        problems = check()
    except Exception as err:  # noqa: BLE001
        problems = [f"raised {type(err).__name__}: {err}"]
    print(f"{'PASS' if not problems else 'FAIL'} {name}" + ("" if not problems else f": {problems[:5]}"))
    return 0.0 if problems else 1.0


def main():
    reward_path = sys.argv[1]
    try:
        import roman
    except Exception as err:  # noqa: BLE001
        print(f"FAIL: cannot import /app/roman.py: {err}")
        roman = None

    scores = {}
    if roman is not None:
        scores["to_roman"] = group("to_roman", lambda: [
            n for n in range(1, 4000) if roman.to_roman(n) != reference(n)])
        scores["to_roman_range"] = group("to_roman_range", lambda: [
            n for n in (0, -1, -7, 4000, 10000) if not raises_value_error(roman.to_roman, n)])
        scores["from_roman"] = group("from_roman", lambda: [
            n for n in range(1, 4000) if roman.from_roman(reference(n)) != n])
        scores["from_roman_invalid"] = group("from_roman_invalid", lambda: [
            s for s in INVALID if not raises_value_error(roman.from_roman, s)])
    else:
        scores = dict.fromkeys(["to_roman", "to_roman_range", "from_roman", "from_roman_invalid"], 0.0)

    reward = sum(scores.values()) / len(scores)
    result = {"reward": reward, "correctness": reward}
    result.update(scores)
    with open(reward_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    print(f"reward {reward}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
