// Package harbor reads and writes the file formats of the Harbor agent-evaluation
// framework: the dataset registry (registry.json), task directories (task.toml,
// instruction.md, tests/test.sh, solution/solve.sh, environment/), verifier
// reward files (reward.json, reward.txt) and trial results (result.json in
// Harbor's TrialResult shape).
//
// The package is pure: it touches only the files it is pointed at, never the
// network, and keeps every JSON and TOML field name exactly as Harbor spells it
// so that files written here are read by Harbor and the other way round.
package harbor
