#!/bin/bash
grep -qx 'Hello, world!' /app/hello.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
