package cloud_test

import (
	"fmt"
	"strings"
	"testing"
)

// Public on-demand prices, us-east-1 (docs/BENCHMARKS.md cites them).
const (
	sqsPerRequest   = 0.40 / 1e6
	dynamoPerWRU    = 0.625 / 1e6
	dynamoPerRRU    = 0.125 / 1e6
	lambdaPerInvoke = 0.20 / 1e6
	lambdaPerGBs    = 0.0000133334 // arm64
	s3PerPUT        = 0.005 / 1000
	s3PerGET        = 0.0004 / 1000

	// lambdaMemoryGB is the functions' memory (256 MB); perCallSeconds is
	// the billed time assumed per AWS request a function makes and
	// perInvokeSeconds the fixed time per invocation: a conservative model
	// in place of the emulator's much shorter latencies.
	lambdaMemoryGB   = 0.25
	perCallSeconds   = 0.010
	perInvokeSeconds = 0.005

	// budgetPerAttempt is the platform's target cost of one attempt.
	budgetPerAttempt = 0.0001
)

// In the cloud the sandbox side of an attempt is fixed by design: the
// runner GETs its task bundle and PUTs result.json and artifacts.tar.gz
// through presigned URLs, and EventBridge sends one message (the ECS
// event) to the completions queue.
const (
	sandboxS3GETs  = 1
	sandboxS3PUTs  = 2
	sandboxSQSSent = 1
)

var functionLabels = []string{"api", "planner", "dispatcher", "grader", "ingester", "leaderboard"}

// costLine is one row of the per-attempt cost table.
type costLine struct {
	item       string
	perAttempt float64 // units per attempt
	price      float64 // dollars per unit
}

func reportCost(t *testing.T, u cloudUsage) {
	t.Helper()
	n := float64(u.attempts)
	var sqsFn, putFn, getFn, calls, invokes float64
	var rru, wru float64
	for _, label := range functionLabels {
		us := u.counter.Usage(label)
		rru += us.RRU
		wru += us.WRU + us.TxWRU + float64(us.FailedWrites) // transactional units billed twice
		for op, c := range us.Calls {
			calls += float64(c)
			switch {
			case strings.HasPrefix(op, "SQS."):
				sqsFn += float64(c)
			case op == "S3.GetObject" || op == "S3.HeadObject":
				getFn += float64(c)
			case strings.HasPrefix(op, "S3."): // PUT, COPY, POST and LIST are priced alike
				putFn += float64(c)
			}
		}
	}
	for _, fn := range functionLabels[1:] {
		invokes += float64(u.invocations[fn])
	}
	invokes++ // the API request that submitted the run
	esm := u.counter.Usage("esm")
	receives := float64(esm.Calls["SQS.ReceiveMessage"] - esm.EmptyReceives)
	deletes := float64(esm.Calls["SQS.DeleteMessageBatch"])
	gbs := (calls*perCallSeconds + invokes*perInvokeSeconds) * lambdaMemoryGB

	lines := []costLine{
		{"SQS requests sent by functions", sqsFn / n, sqsPerRequest},
		{"SQS receives with messages (event source)", receives / n, sqsPerRequest},
		{"SQS batch deletes (event source)", deletes / n, sqsPerRequest},
		{"SQS message from EventBridge (ECS event)", sandboxSQSSent, sqsPerRequest},
		{"DynamoDB write request units (transactions ×2)", wru / n, dynamoPerWRU},
		{"DynamoDB read request units", rru / n, dynamoPerRRU},
		{"Lambda invocations", invokes / n, lambdaPerInvoke},
		{"Lambda GB-seconds (256 MB, modelled)", gbs / n, lambdaPerGBs},
		{"S3 PUT/LIST by functions", putFn / n, s3PerPUT},
		{"S3 GET by functions", getFn / n, s3PerGET},
		{"S3 PUT by the sandbox (presigned)", sandboxS3PUTs, s3PerPUT},
		{"S3 GET by the sandbox (presigned)", sandboxS3GETs, s3PerGET},
	}
	var b strings.Builder
	total := 0.0
	fmt.Fprintf(&b, "| item | per attempt | unit price | $ per attempt |\n|---|---:|---:|---:|\n")
	for _, l := range lines {
		cost := l.perAttempt * l.price
		total += cost
		fmt.Fprintf(&b, "| %s | %.3f | $%.3g | $%.3g |\n", l.item, l.perAttempt, l.price, cost)
	}
	fmt.Fprintf(&b, "| **total** | | | **$%.3g** |\n", total)
	watch := u.counter.Usage("watchdog")
	wd := float64(max(u.invocations["watchdog"], 1))
	var wdCalls float64
	for _, c := range watch.Calls {
		wdCalls += float64(c)
	}
	t.Logf("AWS usage of %d attempts (excluding seeding):\n%s\ninvocations: %v\n\nper attempt:\n%s\nwatchdog: %.1f AWS calls, %.2f RRU per tick (%d ticks in the run)",
		u.attempts, u.counter, u.invocations, b.String(), wdCalls/wd, watch.RRU/wd, u.invocations["watchdog"])
	if total >= budgetPerAttempt {
		t.Errorf("platform cost per attempt $%.3g, over the $%g target", total, budgetPerAttempt)
	}
}
