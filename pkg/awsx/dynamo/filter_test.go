package dynamo_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// matches evaluates a Lambda filter pattern on a stream record as Lambda's
// event filtering does for the subset of the pattern language the patterns
// use (objects of fields, arrays of exact strings and {"prefix": …}); the
// record is taken in its JSON form, the form Lambda filters.
func matches(t *testing.T, pattern map[string]any, record events.DynamoDBEventRecord) bool {
	t.Helper()
	data, err := json.Marshal(record)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return matchObject(t, pattern, doc)
}

func matchObject(t *testing.T, pattern, doc map[string]any) bool {
	for field, want := range pattern {
		got, ok := doc[field]
		if !ok {
			return false
		}
		switch want := want.(type) {
		case map[string]any:
			sub, ok := got.(map[string]any)
			if !ok || !matchObject(t, want, sub) {
				return false
			}
		case []any:
			s, ok := got.(string)
			if !ok || !matchAny(t, want, s) {
				return false
			}
		default:
			t.Fatalf("pattern field %q is %T; patterns hold objects and arrays", field, want)
		}
	}
	return true
}

func matchAny(t *testing.T, values []any, s string) bool {
	for _, v := range values {
		switch v := v.(type) {
		case string:
			if s == v {
				return true
			}
		case map[string]any:
			p, ok := v["prefix"].(string)
			if !ok || len(v) != 1 {
				t.Fatalf("unsupported pattern value %v", v)
			}
			if strings.HasPrefix(s, p) {
				return true
			}
		default:
			t.Fatalf("unsupported pattern value %T", v)
		}
	}
	return false
}

// TestLambdaStreamFiltersKeepWhatRecomputeReads builds stream records of
// every kind of item under a run (the run, agents, counters, gates,
// metrics and their parts, slots, results, logs), inserted, modified and
// removed, and checks the recompute function's filters pass every record
// records.DescribeChange reports on, and no record of an item kind it never
// reports on.
func TestLambdaStreamFiltersKeepWhatRecomputeReads(t *testing.T) {
	filters := dynamo.LambdaStreamFilters(records.DescribedChanges())
	rn, err := json.Marshal(run.Run{ID: "r-1", Workspace: "ws", Status: run.Finished})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sk   string
		pass bool
	}{
		{"RUN", true}, {"RESULT#0/task/1#G000", true},
		{"AGENT#00", false}, {"TALLY", false}, {"TALLY#00", false}, {"GATE", false}, {"METRICS", false},
		{"METRICS#CAT#0000000000000000001#0000", false}, {"METRICS#TASKS#0000000000000000010#0000", false},
		{"SLOT#0/task/1", false}, {"LOG#1#abc", false}, {"RUNX", false}, {"RESULTS", false},
	} {
		for _, kind := range []string{"INSERT", "MODIFY", "REMOVE"} {
			keys := map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("RUN#r-1"), "sk": events.NewStringAttribute(c.sk)}
			img := map[string]events.DynamoDBAttributeValue{"pk": keys["pk"], "sk": keys["sk"], "data": events.NewStringAttribute(string(rn)),
				"v": events.NewNumberAttribute("1")}
			rec := events.DynamoDBEventRecord{EventName: kind, EventSource: "aws:dynamodb", EventID: "1",
				Change: events.DynamoDBStreamRecord{Keys: keys, SequenceNumber: "1", StreamViewType: "NEW_AND_OLD_IMAGES"}}
			if kind != "REMOVE" {
				rec.Change.NewImage = img
			}
			if kind != "INSERT" {
				rec.Change.OldImage = img
			}
			change, err := dynamo.ChangeFromEvent(rec)
			if err != nil {
				t.Fatalf("%s %s: %v", kind, c.sk, err)
			}
			_, described, err := records.DescribeChange(change)
			if err != nil {
				t.Fatalf("%s %s: DescribeChange: %v", kind, c.sk, err)
			}
			passed := false
			for _, f := range filters {
				passed = passed || matches(t, f, rec)
			}
			if passed != c.pass {
				t.Errorf("%s of sort key %q: filters pass it = %v, want %v", kind, c.sk, passed, c.pass)
			}
			if described && !passed {
				t.Errorf("%s of sort key %q: DescribeChange reports on it but the filters drop it", kind, c.sk)
			}
		}
	}
}
