#!/usr/bin/env bash
# Oracle for cron-next-run: expand each field to a set, then search day by day
# and, on a matching day, take the first matching hour and minute.
set -euo pipefail
python3 - <<'PY'
import datetime

NOW = datetime.datetime(2026, 3, 14, 9, 26)


def expand(spec, lo, hi):
    values = set()
    for part in spec.split(","):
        rng, _, step = part.partition("/")
        if rng == "*":
            first, last = lo, hi
        elif "-" in rng:
            first, last = (int(x) for x in rng.split("-"))
        else:
            first = last = int(rng)
        values.update(range(first, last + 1, int(step) if step else 1))
    return values


def next_run(fields):
    minutes, hours = expand(fields[0], 0, 59), expand(fields[1], 0, 23)
    days, months = expand(fields[2], 1, 31), expand(fields[3], 1, 12)
    weekdays = {d % 7 for d in expand(fields[4], 0, 7)}
    either = fields[2] != "*" and fields[4] != "*"
    start = NOW + datetime.timedelta(minutes=1)
    day = start.date()
    for _ in range(366 * 8):
        weekday = day.isoweekday() % 7
        day_ok = (day.day in days or weekday in weekdays) if either else (day.day in days and weekday in weekdays)
        if day.month in months and day_ok:
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    when = datetime.datetime(day.year, day.month, day.day, hour, minute)
                    if when >= start:
                        return when
        day += datetime.timedelta(days=1)
    raise ValueError(f"no run within 8 years for {fields}")


with open("/app/crontab", encoding="utf-8") as src, open("/app/next_runs.tsv", "w", encoding="utf-8") as out:
    for line in src:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(None, 5)
        when = next_run(parts[:5])
        out.write(f"{when:%Y-%m-%dT%H:%M}\t{parts[5].strip()}\n")
PY
