"""Checks the modes under /app/deploy and that file contents are unchanged."""
import os
import stat
import sys

ROOT = "/app/deploy"
PRISTINE = "/tests/pristine/deploy"
WANT = {
    ".": 0o755,
    "run.sh": 0o750,
    "config": 0o750,
    "config/app.conf": 0o640,
    "secrets": 0o700,
    "secrets/api.key": 0o600,
    "public": 0o755,
    "public/index.html": 0o644,
    "logs": 0o1777,
    "logs/README": 0o644,
}


def main():
    failures = []
    for rel, want in WANT.items():
        path = os.path.join(ROOT, rel)
        try:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
        except OSError as err:
            failures.append(f"{rel}: {err}")
            continue
        if mode != want:
            failures.append(f"{rel}: mode {mode:04o}, want {want:04o}")
        pristine = os.path.join(PRISTINE, rel)
        if os.path.isfile(pristine):
            with open(pristine, "rb") as a, open(path, "rb") as b:
                if a.read() != b.read():
                    failures.append(f"{rel}: contents changed")
    for failure in failures:
        print("FAIL", failure)
    if failures:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
