#!/usr/bin/env bash
# Verifier of the runner's judge fixture task: asks the LLM judge (an OpenAI
# Chat Completions endpoint at $OPENAI_BASE_URL, key $OPENAI_API_KEY) to
# grade /app/essay.txt, with nothing but bash (/dev/tcp, HTTP/1.0), and
# writes reward 1 when the judge answers PASS, 0 otherwise, and none when
# the judge did not answer. It records what it saw.
set -u
out=${GAUNTLET_VERIFIER_LOGS_DIR:-/logs/verifier}
env > "$out/probe-env.txt"
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' '\n' < "$f"; echo; done > "$out/probe-proc.txt" 2>/dev/null
essay=$(tr -d '"\\\n' < /app/essay.txt 2>/dev/null)
rest=${OPENAI_BASE_URL#http://}
hostport=${rest%%/*}
prefix=/${rest#*/}
[ "$prefix" = "/$rest" ] && prefix=
body='{"model":"'"$MODEL_NAME"'","messages":[{"role":"user","content":"Answer PASS or FAIL. Essay: '"$essay"'"}]}'
if ! exec 4<>"/dev/tcp/${hostport%:*}/${hostport##*:}"; then
  echo "judge unreachable at $OPENAI_BASE_URL" >&2
  exit 2
fi
printf 'POST %s/chat/completions HTTP/1.0\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
  "$prefix" "$hostport" "$OPENAI_API_KEY" "${#body}" "$body" >&4
cat <&4 > "$out/judge-answer.txt"
exec 4<&-
# A judge that did not answer grades nothing: no reward, not a 0.
if ! head -n 1 "$out/judge-answer.txt" | grep -q ' 200 '; then
  echo "the judge answered: $(head -n 1 "$out/judge-answer.txt")" >&2
  exit 3
fi
reward=0
if grep -q '"content": *"PASS' "$out/judge-answer.txt"; then
  reward=1
fi
echo "judge reward $reward"
echo "$reward" > "$out/reward.txt"
