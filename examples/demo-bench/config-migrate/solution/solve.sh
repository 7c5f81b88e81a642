#!/usr/bin/env bash
# Oracle for config-migrate: a small line parser with explicit typing rules.
set -euo pipefail
python3 - <<'PY'
import json
import re


def typed(raw):
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    if re.fullmatch(r"[+-]?[0-9]+", raw):
        return int(raw)
    if re.fullmatch(r"[+-]?[0-9]+\.[0-9]+", raw):
        return float(raw)
    return raw


config, section = {}, None
with open("/app/legacy.ini", encoding="utf-8") as f:
    for line in f:
        text = line.strip()
        if not text or text[0] in ";#":
            continue
        if text.startswith("[") and text.endswith("]"):
            section = config.setdefault(text[1:-1].strip().lower(), {})
            continue
        key, _, value = text.partition("=")
        section[key.strip().lower()] = typed(value.strip())

with open("/app/config.json", "w", encoding="utf-8") as f:
    json.dump(config, f, indent=2)
PY
