#!/usr/bin/env bash
# Oracle for markdown-toc: scan headings outside fences, slug them GitHub-style,
# and replace the text between the markers.
set -euo pipefail
python3 - <<'PY'
import re

PATH = "/app/README.md"
with open(PATH, encoding="utf-8") as f:
    lines = f.read().split("\n")

heading = re.compile(r"^(#{1,6}) (.+)$")
seen, entries, fence = {}, [], None
for line in lines:
    marker = line[:3]
    if fence:
        if marker == fence:
            fence = None
        continue
    if marker in ("```", "~~~"):
        fence = marker
        continue
    m = heading.match(line)
    if not m:
        continue
    text = m.group(2).strip()
    base = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
    count = seen.get(base, 0)
    seen[base] = count + 1
    anchor = base if count == 0 else f"{base}-{count}"
    level = len(m.group(1))
    if level in (2, 3):
        entries.append("  " * (level - 2) + f"- [{text}](#{anchor})")

start, end = lines.index("<!-- toc -->"), lines.index("<!-- /toc -->")
lines[start + 1:end] = entries
with open(PATH, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
PY
