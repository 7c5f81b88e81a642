# Shared helpers of the steps' test.sh scripts: the task's tests/ is
# uploaded to /tests before each step's own tests/.

write_reward() { echo "$1" > /logs/verifier/reward.txt; }
pass() { write_reward 1; exit 0; }
fail() { echo "FAIL: $*"; write_reward 0; exit 0; }
