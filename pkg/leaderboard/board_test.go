package leaderboard

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/stats"
	"github.com/google/go-cmp/cmp"
)

// rowView is the part of a Row the ranking tests pin.
type rowView struct {
	Entrant string
	Rank    int
	Best    bool
	Tied    bool
	Value   *float64
}

func view(b Board) []rowView {
	var out []rowView
	for _, r := range b.Rows {
		out = append(out, rowView{Entrant: r.Summary.Entrant.String(), Rank: r.Rank, Best: r.Best, Tied: r.TiedWithBest, Value: r.Value})
	}
	return out
}

// costAttempts gives one passed attempt per task with the given costs.
func costAttempts(costs ...float64) []Attempt {
	var as []Attempt
	for i, c := range costs {
		as = append(as, Attempt{Task: string(rune('a' + i)), Outcome: Passed, CostUSD: c, HasCost: true,
			DurationSec: 10 * c, HasDuration: true, InputTokens: int64(1000 * c), HasTokens: true})
	}
	return as
}

func TestNewBoardRanks(t *testing.T) {
	all := append(repeat("P", 9), "P")
	nine := append(repeat("P", 9), "F")
	two := append(repeat("F", 8), "P", "P")
	tests := []struct {
		name   string
		inputs []EntrantInput
		metric Metric
		want   []rowView
	}{
		{
			// B vs A: one difference of −1 in ten ⇒ t = −1, p = 0.343 (tie).
			// C vs A: eight of −1 ⇒ t = −6, p = 0.0002 (separated); two
			// entrants are strictly better ⇒ rank 3.
			name: "statistical tie then 3",
			inputs: []EntrantInput{
				input("hc", "c", eligibleRun("r3", t0), tasks(two...)),
				input("ha", "a", eligibleRun("r1", t0), tasks(all...)),
				input("hb", "b", eligibleRun("r2", t0), tasks(nine...)),
			},
			metric: MetricPass1,
			want: []rowView{
				{"a (ha)", 1, true, false, ptr(1.0)},
				{"b (hb)", 1, false, true, ptr(0.9)},
				{"c (hc)", 3, false, false, ptr(0.2)},
			},
		},
		{
			name: "exact tie 1 1 3",
			inputs: []EntrantInput{
				input("h", "a", eligibleRun("r1", t0), tasks(nine...)),
				input("h", "b", eligibleRun("r2", t0), tasks(nine...)),
				input("h", "c", eligibleRun("r3", t0), tasks(two...)),
			},
			metric: MetricPass1,
			want: []rowView{
				{"a (h)", 1, true, false, ptr(0.9)},
				{"b (h)", 1, false, false, ptr(0.9)},
				{"c (h)", 3, false, false, ptr(0.2)},
			},
		},
		{
			// B − A per task: 0.1, 0.1, −0.1, 0.2 ⇒ t = 1.19, p = 0.319 (tie);
			// C − A is 1 on every task ⇒ zero spread, p = 0 (separated).
			name: "cost is lower-is-better",
			inputs: []EntrantInput{
				input("h", "a", eligibleRun("r1", t0), costAttempts(1, 2, 3, 4)),
				input("h", "b", eligibleRun("r2", t0), costAttempts(1.1, 2.1, 2.9, 4.2)),
				input("h", "c", eligibleRun("r3", t0), costAttempts(2, 3, 4, 5)),
			},
			metric: MetricCost,
			want: []rowView{
				{"a (h)", 1, true, false, ptr(2.5)},
				{"b (h)", 1, false, true, ptr(2.575)},
				{"c (h)", 3, false, false, ptr(3.5)},
			},
		},
		{
			name: "time is lower-is-better",
			inputs: []EntrantInput{
				input("h", "slow", eligibleRun("r1", t0), costAttempts(2, 3, 4, 5)),
				input("h", "fast", eligibleRun("r2", t0), costAttempts(1, 2, 3, 4)),
			},
			metric: MetricTime,
			want: []rowView{
				{"fast (h)", 1, true, false, ptr(25.0)},
				{"slow (h)", 2, false, false, ptr(35.0)},
			},
		},
		{
			name: "tokens is lower-is-better",
			inputs: []EntrantInput{
				input("h", "big", eligibleRun("r1", t0), costAttempts(2, 3, 4, 5)),
				input("h", "small", eligibleRun("r2", t0), costAttempts(1, 2, 3, 4)),
			},
			metric: MetricTokens,
			want: []rowView{
				{"small (h)", 1, true, false, ptr(2500.0)},
				{"big (h)", 2, false, false, ptr(3500.0)},
			},
		},
		{
			name: "row without the metric is unranked and last",
			inputs: []EntrantInput{
				input("h", "a", eligibleRun("r1", t0), tasks("P", "F")),
				input("h", "b", eligibleRun("r2", t0), costAttempts(1, 2)),
			},
			metric: MetricCost,
			want: []rowView{
				{"b (h)", 1, true, false, ptr(1.5)},
				{"a (h)", 0, false, false, nil},
			},
		},
		{
			// X reached k = 3, Y only k = 2: the group ranks by pass@2.
			// X per task pass@2: 1, 1 − C(2,2)/C(3,2) = 2/3 ⇒ 5/6; Y: 1, 0 ⇒ 1/2.
			name: "pass@k ranks at the deepest k every row reached",
			inputs: []EntrantInput{
				input("h", "x", eligibleRun("r1", t0), tasks("PPP", "PFF")),
				input("h", "y", eligibleRun("r2", t0), tasks("PP", "FF")),
			},
			metric: MetricPassAtK,
			want: []rowView{
				{"x (h)", 1, true, false, ptr(5.0 / 6)},
				{"y (h)", 1, false, true, ptr(0.5)},
			},
		},
		{
			// pass^2: x passes both attempts of every task (1), y one of
			// two (C(1,2)/C(2,2) = 0); every difference −1 ⇒ separated.
			name: "pass^k ranks by pass^K",
			inputs: []EntrantInput{
				input("h", "y", eligibleRun("r2", t0), tasks("PF", "FP", "PF")),
				input("h", "x", eligibleRun("r1", t0), tasks("PP", "PP", "PP")),
			},
			metric: MetricPassHatK,
			want: []rowView{
				{"x (h)", 1, true, false, ptr(1.0)},
				{"y (h)", 2, false, false, ptr(0.0)},
			},
		},
		{
			// y's platform errors are left out of pass@1 (1.0, tied with
			// x) but are failures in the errors-as-failures view (0.5).
			name: "errors as failures",
			inputs: []EntrantInput{
				input("h", "x", eligibleRun("r1", t0), tasks("PP", "PP", "PP", "PP")),
				input("h", "y", eligibleRun("r2", t0), platformErrors(tasks("PX", "PX", "PX", "PX"))),
			},
			metric: MetricPass1ErrorsAsFailures,
			want: []rowView{
				{"x (h)", 1, true, false, ptr(1.0)},
				{"y (h)", 2, false, false, ptr(0.5)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Build(tt.inputs, tt.metric, Options{})
			if diff := cmp.Diff(tt.want, view(b), approx); diff != "" {
				t.Errorf("Build(%s) rows mismatch (-want +got):\n%s", tt.metric, diff)
			}
		})
	}
}

// platformErrors turns the attempts coded 'X' (outcomes gives them no
// outcome) into platform errors.
func platformErrors(as []Attempt) []Attempt {
	for i := range as {
		if as[i].Outcome == "" {
			as[i].Outcome, as[i].ErrorClass = Errored, PlatformError
		}
	}
	return as
}

func TestNewBoardComparison(t *testing.T) {
	inputs := []EntrantInput{
		input("h", "a", eligibleRun("r1", t0), tasks(append(repeat("P", 9), "P")...)),
		input("h", "b", eligibleRun("r2", t0), tasks(append(repeat("P", 9), "F")...)),
		input("h", "c", eligibleRun("r3", t0), tasks(append(repeat("F", 8), "P", "P")...)),
	}
	board := Build(inputs, MetricPass1, Options{})
	rows := board.Rows
	if m := board.MinDetectableDiff; m == nil || math.Abs(*m-3.145561*(0.1+0.4/3)/2) > 1e-6 {
		t.Errorf("Build().MinDetectableDiff = %v, want %v", m, 3.145561*(0.1+0.4/3)/2)
	}
	// Independently: B − A = −0.1 ± 2.262157·0.1, t = −1, p = 0.3434364
	// (numerical integration of the t(9) density); C − A = −0.8 ± 2.262157·0.4/3,
	// t = −6, p = 0.0002025. Holm over the two: 2·0.0002025 = 0.000405 for
	// C, max(0.000405, 1·0.3434364) for B. Minimum detectable differences:
	// (t(0.975, 9) + t(0.80, 9))·se = (2.262157 + 0.883404)·se with se 0.1
	// and 0.4/3; the board's is their median.
	want := []*Comparison{
		nil,
		{Tasks: 10, Tested: true, Diff: -0.1, CI: iv(-0.3262157, 0.1262157), P: ptr(0.3434364), AdjustedP: ptr(0.3434364), T: ptr(-1.0), DF: 9,
			MinDetectable: ptr(3.145561 * 0.1)},
		{Tasks: 10, Tested: true, Diff: -0.8, CI: iv(-1.1016209, -0.4983791), P: ptr(0.0002025), AdjustedP: ptr(0.000405), T: ptr(-6.0), DF: 9,
			MinDetectable: ptr(3.145561 * 0.4 / 3)},
	}
	var got []*Comparison
	for _, r := range rows {
		got = append(got, r.VsBest)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })); diff != "" {
		t.Errorf("Build() comparisons mismatch (-want +got):\n%s", diff)
	}
}

// TestNewBoardHolmKeepsLuckyRowsTied: two rows each separated from the best
// at p = 0.0368 on their own are tied once the family of two is adjusted
// (Holm: 2·0.0368 = 0.0736 ≥ 0.05).
func TestNewBoardHolmKeepsLuckyRowsTied(t *testing.T) {
	six := append(repeat("P", 6), repeat("F", 4)...)
	inputs := []EntrantInput{
		input("h", "a", eligibleRun("r1", t0), tasks(repeat("P", 10)...)),
		input("h", "b", eligibleRun("r2", t0), tasks(six...)),
		input("h", "c", eligibleRun("r3", t0), tasks(six...)),
	}
	b := Build(inputs, MetricPass1, Options{})
	want := []rowView{
		{"a (h)", 1, true, false, ptr(1.0)},
		{"b (h)", 1, false, true, ptr(0.6)},
		{"c (h)", 1, false, true, ptr(0.6)},
	}
	if diff := cmp.Diff(want, view(b), approx); diff != "" {
		t.Errorf("Build() rows mismatch (-want +got):\n%s", diff)
	}
	// Raw and adjusted p from pkg/stats/testdata/reference.py ("lb holm p").
	for _, r := range b.Rows[1:] {
		c := r.VsBest
		if c == nil || c.P == nil || c.AdjustedP == nil ||
			math.Abs(*c.P-0.03678749787979141) > 1e-9 || math.Abs(*c.AdjustedP-0.07357499575958282) > 1e-9 {
			t.Errorf("%s: VsBest = %+v, want p 0.0367875 adjusted 0.0735750", r.Summary.Entrant, c)
		}
	}
}

func TestNewBoardUntestableComparisonIsATie(t *testing.T) {
	inputs := []EntrantInput{
		input("h", "a", eligibleRun("r1", t0), tasks("PP")),
		input("h", "b", eligibleRun("r2", t0), tasks("FF")),
	}
	rows := Build(inputs, MetricPass1, Options{}).Rows
	want := &Comparison{Tasks: 1, Tested: false, Diff: -1}
	if diff := cmp.Diff(want, rows[1].VsBest); diff != "" || rows[1].Rank != 1 || !rows[1].TiedWithBest {
		t.Errorf("Build() one-task comparison = rank %d tied %v %+v, want rank 1 tied; diff:\n%s", rows[1].Rank, rows[1].TiedWithBest, rows[1].VsBest, diff)
	}
}

// TestNewBoardOneListTiesOnlyWithinTheBestsMeasurement pins the spec's
// rule: every entrant ranks in one list, and task set and version enter only
// the tie test — a row is tested against the best (and can tie with it) only
// when it ran the same task set on the same resolved version.
func TestNewBoardOneListTiesOnlyWithinTheBestsMeasurement(t *testing.T) {
	strong := tasks(repeat("P", 10)...)
	nine := tasks(append(repeat("P", 9), "F")...)
	parity := eligibleRun("r2", t0)
	parity.TaskSet, parity.Coverage = "parity", CoverageParity
	v2 := eligibleRun("r3", t0)
	v2.ManifestVersion, v2.ManifestDigest = "v2", "sha256:bb"
	redigested := eligibleRun("r4", t0)
	redigested.ManifestDigest = "sha256:cc"
	inputs := []EntrantInput{
		input("h", "strong", eligibleRun("r1", t0), strong),
		// The same 90 % on the best's measurement ties (p = 0.34) …
		input("h", "close", eligibleRun("r5", t0), nine),
		// … and on any other measurement is ranked by its number, never tied.
		input("h", "close-parity", parity, nine),
		input("h", "close-v2", v2, nine),
		input("h", "close-redigested", redigested, nine),
	}
	b := Build(inputs, MetricPass1, Options{})
	want := []rowView{
		{"strong (h)", 1, true, false, ptr(1.0)},
		{"close (h)", 1, false, true, ptr(0.9)},
		// Competition rank: 1 + the one entrant with a strictly better value.
		{"close-parity (h)", 2, false, false, ptr(0.9)},
		{"close-redigested (h)", 2, false, false, ptr(0.9)},
		{"close-v2 (h)", 2, false, false, ptr(0.9)},
	}
	if diff := cmp.Diff(want, view(b), approx); diff != "" {
		t.Errorf("Build() rows mismatch (-want +got):\n%s", diff)
	}
	for _, r := range b.Rows {
		other := r.Summary.Run.TaskSet != "" || r.Summary.Run.ManifestVersion != "v1" || r.Summary.Run.ManifestDigest != "sha256:aa"
		if other && r.VsBest != nil {
			t.Errorf("%s: compared with the best across measurements: %+v", r.Summary.Entrant, r.VsBest)
		}
		if r.Summary.Entrant.Model == "close" && r.VsBest == nil {
			t.Errorf("close: no comparison with the best of its own measurement")
		}
	}
	if b.K != 1 {
		t.Errorf("Build().K = %d, want 1", b.K)
	}
}

// TestNewBoardRowsWithoutUsageRankLast: an entrant that reports no cost
// (or tokens) has no value for that metric; it ranks after every entrant
// with a value, unranked, never first.
func TestNewBoardRowsWithoutUsageRankLast(t *testing.T) {
	inputs := []EntrantInput{
		input("h", "free", eligibleRun("r1", t0), tasks("P", "P", "P")),
		input("h", "paid", eligibleRun("r2", t0), costAttempts(1, 2, 3)),
		input("h", "cheap", eligibleRun("r3", t0), costAttempts(0.1, 0.2, 0.3)),
	}
	for _, m := range []Metric{MetricCost, MetricTokens} {
		b := Build(inputs, m, Options{})
		last := b.Rows[len(b.Rows)-1]
		if last.Summary.Entrant.Model != "free" || last.Rank != 0 || last.Value != nil {
			t.Errorf("%s: last row = %s rank %d value %v, want free unranked without a value", m, last.Summary.Entrant, last.Rank, last.Value)
		}
		if first := b.Rows[0]; first.Summary.Entrant.Model != "cheap" || first.Rank != 1 {
			t.Errorf("%s: first row = %s rank %d, want cheap rank 1", m, first.Summary.Entrant, first.Rank)
		}
	}
}

func TestBoardJSONHasNoNonFiniteNumbers(t *testing.T) {
	// C − A is identical on every task ⇒ t = −Inf, which JSON cannot hold.
	inputs := []EntrantInput{
		input("h", "a", eligibleRun("r1", t0), costAttempts(1, 2, 3)),
		input("h", "c", eligibleRun("r2", t0), costAttempts(2, 3, 4)),
		input("h", "none", eligibleRun("r3", t0), tasks("P", "P", "F")),
	}
	for _, b := range Boards(SummarizeAll(inputs, Options{})) {
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("json.Marshal(board %s) error = %v", b.Metric, err)
		}
		if b.Metric == MetricCost && !strings.Contains(string(out), `"p":0,`) {
			t.Errorf("json.Marshal(board cost) = %s, want a zero p-value for the zero-spread comparison", out)
		}
	}
}

func TestParseMetric(t *testing.T) {
	tests := []struct {
		in      string
		want    Metric
		wantDir stats.Direction
		wantErr bool
	}{
		{"pass@1", MetricPass1, stats.HigherIsBetter, false},
		{"pass@k", MetricPassAtK, stats.HigherIsBetter, false},
		{"cost", MetricCost, stats.LowerIsBetter, false},
		{"time", MetricTime, stats.LowerIsBetter, false},
		{"tokens", MetricTokens, stats.LowerIsBetter, false},
		{"pass@5", "", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseMetric(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want || (err == nil && got.Direction() != tt.wantDir) {
			t.Errorf("ParseMetric(%q) = %q, %v, want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestEntrantString(t *testing.T) {
	tests := []struct {
		in   Entrant
		want string
	}{
		{Entrant{Harness: "codex", Model: "openai/gpt-5.2"}, "openai/gpt-5.2 (codex)"},
		{Entrant{Harness: "oracle"}, "oracle"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}
