// Package examples holds gauntlet's example material: demo-bench (a
// Harbor-format dataset of small offline tasks), the registry.json and
// managed-benchmark catalog that list it, example run configs, and a
// heuristic agent for the `command` harness. The package has no code of its
// own; its tests run every task for real inside bubblewrap.
package examples
