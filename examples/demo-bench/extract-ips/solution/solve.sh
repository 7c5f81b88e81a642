#!/usr/bin/env bash
# Oracle for extract-ips: strict octet regex with digit/dot lookarounds.
set -euo pipefail
python3 - <<'PY'
import re

octet = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
address = re.compile(rf"(?<![0-9.]){octet}(?:\.{octet}){{3}}(?![0-9.])")
with open("/app/access.log", encoding="utf-8") as f:
    found = set(address.findall(f.read()))
ordered = sorted(found, key=lambda ip: tuple(int(p) for p in ip.split(".")))
with open("/app/ips.txt", "w", encoding="utf-8") as f:
    f.writelines(ip + "\n" for ip in ordered)
PY
