package pipeline_test

import (
	"errors"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// cmpCounts compares tallies on their outcome counters only.
var cmpCounts = cmp.Options{cmpopts.IgnoreFields(run.Tally{}, "DurationMS", "InputTokens", "CacheTokens", "OutputTokens", "CostMicroUSD")}

func hasKey(objs []blob.Info, key string) bool {
	for _, o := range objs {
		if o.Key == key {
			return true
		}
	}
	return false
}

func hasPrefix(objs []blob.Info, prefix string) bool {
	for _, o := range objs {
		if strings.HasPrefix(o.Key, prefix) {
			return true
		}
	}
	return false
}

var cmpNoDuration = cmp.Options{cmpopts.IgnoreFields(run.Tally{}, "DurationMS")}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
