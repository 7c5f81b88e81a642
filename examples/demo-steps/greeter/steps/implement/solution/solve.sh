#!/usr/bin/env bash
set -euo pipefail
cat > /app/greet.sh <<'SH'
#!/usr/bin/env bash
name=$(tr -d '[:space:]' < /app/config.txt)
echo "Hello, ${name}!"
SH
chmod +x /app/greet.sh
