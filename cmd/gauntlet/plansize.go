package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/gauntlet-bench/gauntlet/pkg/stats"
)

const planSizeUsage = `usage: gauntlet plan-size --pass-a RATE (--pass-b RATE | --diff D) [--attempts N] [--alpha A] [--power P] [--json]

Says how many tasks × attempts a paired test needs to separate two agents
whose pass rates are RATE (e.g. observed pass@1 values from a run), or one at
RATE and the other D lower, with the given power at two-sided level A.

flags:`

// runPlanSize is the "plan-size" subcommand: a power analysis for the paired
// comparison the leaderboard's tie test makes.
func runPlanSize(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan-size", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nan := math.NaN()
	passA := fs.Float64("pass-a", nan, "pass rate of agent A, between 0 and 1")
	passB := fs.Float64("pass-b", nan, "pass rate of agent B, between 0 and 1")
	diff := fs.Float64("diff", nan, "planned difference: agent B's rate is pass-a − `D` (instead of --pass-b)")
	attempts := fs.Int("attempts", 1, "attempts per task")
	alpha := fs.Float64("alpha", 1-stats.Confidence, "two-sided significance level")
	power := fs.Float64("power", stats.DefaultPower, "probability of detecting the difference")
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), planSizeUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil {
		return exitUsage
	}
	fail := func(msg string) int {
		fmt.Fprintf(stderr, "gauntlet plan-size: %s\n", msg)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return fail(fmt.Sprintf("unexpected argument %q: every input is a flag", fs.Arg(0)))
	}
	if math.IsNaN(*passA) {
		return fail("--pass-a is required (a pass rate between 0 and 1)")
	}
	switch {
	case math.IsNaN(*passB) && math.IsNaN(*diff):
		return fail("give --pass-b (agent B's pass rate) or --diff (the planned difference)")
	case !math.IsNaN(*passB) && !math.IsNaN(*diff):
		return fail("--pass-b and --diff are alternatives: give one")
	case !math.IsNaN(*diff):
		*passB = *passA - *diff
		if *passB < 0 || *passB > 1 {
			return fail(fmt.Sprintf("--diff %v: pass-a − diff = %v is not a pass rate between 0 and 1", *diff, *passB))
		}
	}
	plan, err := stats.PairedSampleSize(*passA, *passB, *alpha, *power, *attempts)
	if err != nil {
		return fail(planSizeFlagError(err))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(plan); err != nil {
			fmt.Fprintf(stderr, "gauntlet plan-size: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "To separate pass rates %.3g and %.3g with %.0f%% power at α = %.3g:\n",
		plan.PassA, plan.PassB, plan.Power*100, plan.Alpha)
	fmt.Fprintf(stdout, "  %d tasks × %d attempts (%d paired observations)\n", plan.Tasks, plan.Attempts, plan.Pairs)
	fmt.Fprintln(stdout, "Assumptions:")
	for _, a := range plan.Assumptions {
		fmt.Fprintf(stdout, "  - %s\n", a)
	}
	return exitOK
}

// planSizeFlagError names the flag behind a stats validation error, since
// the stats package speaks of quantities rather than flags.
func planSizeFlagError(err error) string {
	msg := err.Error()
	for _, m := range []struct{ prefix, flag string }{
		{"pass rates A and B", "--pass-a/--pass-b"},
		{"pass rate A", "--pass-a"},
		{"pass rate B", "--pass-b"},
		{"alpha", "--alpha"},
		{"power", "--power"},
		{"attempts", "--attempts"},
	} {
		if len(msg) >= len(m.prefix) && msg[:len(m.prefix)] == m.prefix {
			return m.flag + ": " + msg
		}
	}
	return msg
}
