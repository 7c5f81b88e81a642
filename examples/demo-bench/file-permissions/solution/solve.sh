#!/usr/bin/env bash
# Oracle for file-permissions: apply the policy path by path.
set -euo pipefail
cd /app/deploy
chmod 755 .
chmod 750 run.sh config
chmod 640 config/app.conf
chmod 700 secrets
chmod 600 secrets/api.key
chmod 755 public
chmod 644 public/index.html logs/README
chmod 1777 logs
