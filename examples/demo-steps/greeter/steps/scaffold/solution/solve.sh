#!/usr/bin/env bash
set -euo pipefail
cat > /app/greet.sh <<'SH'
#!/usr/bin/env bash
echo hello
SH
chmod +x /app/greet.sh
