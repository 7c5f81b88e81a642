#!/usr/bin/env bash
set -euo pipefail
cat > /app/README.md <<'MD'
# greeter

`greet.sh` greets the name written in `config.txt`:

    $ ./greet.sh
    Hello, Gauntlet!
MD
