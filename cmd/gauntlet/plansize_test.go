package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestPlanSize(t *testing.T) {
	var out, errb bytes.Buffer
	// 0.6 vs 0.4 needs 100 pairs by Connor's formula (worked by hand in
	// pkg/stats/power_test.go); over 2 attempts that is 50 tasks.
	if code := dispatch(context.Background(), []string{"plan-size", "--pass-a", "0.6", "--diff", "0.2", "--attempts", "2"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "50 tasks × 2 attempts (100 paired observations)") || !strings.Contains(out.String(), "Assumptions:") {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	if code := dispatch(context.Background(), []string{"plan-size", "--pass-a", "0.6", "--pass-b", "0.4", "--json"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var plan struct {
		Tasks, Pairs int
		Assumptions  []string
	}
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil || plan.Tasks != 100 || plan.Pairs != 100 || len(plan.Assumptions) == 0 {
		t.Fatalf("json %s: %+v %v", out.String(), plan, err)
	}
}

func TestPlanSizeErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--pass-a is required"},
		{[]string{"--pass-a", "0.5"}, "give --pass-b"},
		{[]string{"--pass-a", "0.5", "--pass-b", "0.4", "--diff", "0.1"}, "alternatives"},
		{[]string{"--pass-a", "0.5", "--diff", "0.7"}, "--diff 0.7"},
		{[]string{"--pass-a", "1.5", "--pass-b", "0.4"}, "--pass-a: pass rate A"},
		{[]string{"--pass-a", "0.5", "--pass-b", "0.5"}, "--pass-a/--pass-b"},
		{[]string{"--pass-a", "0.6", "--pass-b", "0.4", "--attempts", "0"}, "--attempts"},
		{[]string{"--pass-a", "0.6", "--pass-b", "0.4", "--power", "1"}, "--power"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), append([]string{"plan-size"}, c.args...), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, want usage exit naming %q", c.args, code, errb.String(), c.want)
		}
	}
}
