package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// printStepResults lists, after a run's summary, every attempt of a
// multi-step task with its steps: each step's reward, exception, phase
// times, tokens and cost. Nothing is printed for a run without one.
func printStepResults(ctx context.Context, w io.Writer, c *client.Client, runID string) error {
	var stepped []v1.ResultView
	cursor := ""
	for {
		page, err := c.Results(ctx, runID, client.ResultFilter{Cursor: cursor, Limit: 500})
		if err != nil {
			return err
		}
		for _, r := range page.Results {
			if len(r.Steps) > 0 {
				stepped = append(stepped, r)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(stepped) == 0 {
		return nil
	}
	sort.SliceStable(stepped, func(i, j int) bool {
		a, b := stepped[i], stepped[j]
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		return a.Attempt < b.Attempt
	})
	fmt.Fprintln(w, "\nmulti-step attempts:")
	for _, r := range stepped {
		fmt.Fprintf(w, "  %s · attempt %d · %s: %s, reward %s\n", r.Task, r.Attempt, r.AgentLabel, r.Outcome, rewardText(r.Reward))
		for _, s := range r.Steps {
			line := fmt.Sprintf("    step %-16s reward %-6s agent %s, verifier %s, tokens %s in / %s out, cost %s",
				s.Name, rewardText(s.Reward), span(s.AgentSec), span(s.VerifierSec),
				humanCount(s.Tokens.Input), humanCount(s.Tokens.Output), costText(s.CostUSD, false))
			if len(s.Rewards) > 1 {
				line += " " + rewardsText(s.Rewards)
			}
			if s.Exception != "" {
				line += " — " + s.Exception
			}
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

func rewardText(r *float64) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%g", *r)
}

// rewardsText is a reward dict as "{a=1 b=0.5}", keys sorted.
func rewardsText(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%g", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}
