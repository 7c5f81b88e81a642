package functions_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

var functionNames = []string{"api", "planner", "dispatcher", "grader", "ingester", "leaderboard", "registrysync", "watchdog"}

// functionEnv is what the CDK stack gives each function (cloud.Needs),
// plus the SDK's endpoint overrides and credentials for the emulators.
func functionEnv(w *world, name string) map[string]string {
	keep := map[string][]string{
		"api":          {cloud.EnvPlanQueueURL, cloud.EnvSyncQueueURL, cloud.EnvBucket, cloud.EnvSecretsPrefix, cloud.EnvSecretsKMSKey, cloud.EnvJWTIssuer, cloud.EnvJWTAudience, cloud.EnvRegistry},
		"planner":      {cloud.EnvSlotsQueueURL, cloud.EnvPlanQueueURL},
		"dispatcher":   {cloud.EnvSlotsQueueURL, cloud.EnvCompletionsQueueURL, cloud.EnvResultsQueueURL, cloud.EnvBucket, cloud.EnvSecretsPrefix, cloud.EnvSecretsKMSKey, cloud.EnvMaxSandboxes, cloud.EnvSandboxKMSKey},
		"grader":       {cloud.EnvResultsQueueURL, cloud.EnvBucket},
		"ingester":     {cloud.EnvSlotsQueueURL},
		"leaderboard":  {},
		"registrysync": {cloud.EnvSyncQueueURL, cloud.EnvBucket, cloud.EnvSecretsPrefix, cloud.EnvSecretsKMSKey, cloud.EnvRegistry, cloud.EnvImageBuildProject, cloud.EnvTaskImagesRepository, cloud.EnvTaskImagesURI, cloud.EnvSandboxMirrors},
		"watchdog":     {cloud.EnvPlanQueueURL, cloud.EnvSlotsQueueURL, cloud.EnvCompletionsQueueURL},
	}[name]
	sandboxVars := []string{cloud.EnvCluster, cloud.EnvSubnets, cloud.EnvSecurityGroups, cloud.EnvSandboxTaskRoleARN,
		cloud.EnvSandboxExecutionRole, cloud.EnvSandboxLogGroup, cloud.EnvRunnerImage, cloud.EnvSandboxDefaultImage}
	if name == "planner" || name == "dispatcher" || name == "watchdog" {
		keep = append(keep, sandboxVars...)
	}
	keep = append(keep, cloud.EnvStage, cloud.EnvTable, cloud.EnvLogLevel)
	env := map[string]string{}
	for k, v := range w.vars {
		if strings.HasPrefix(k, "AWS_") {
			env[k] = v
		}
	}
	for _, k := range keep {
		env[k] = w.vars[k]
	}
	if name == "registrysync" {
		// Every benchmark synced before the scheduled event is due, so the
		// sample event enqueues refreshes the test can follow.
		env[cloud.EnvSyncRefreshAfter] = "0s"
		// A sync parked on image builds resumes a second later.
		env[cloud.EnvSyncResumeAfter] = "1s"
	}
	return env
}

// TestFunctionsUnderRIE runs every function binary (built for the host)
// under AWS's Lambda runtime interface emulator, each with only the
// variables its Needs name, and replays the events/ samples in pipeline
// order against the emulators, checking each response and side effect.
func TestFunctionsUnderRIE(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rie := cloudtest.RIE(t, root)
	bins := cloudtest.BuildFunctions(t, root, functionNames...)
	w := newWorld(t)
	fn := map[string]*cloudtest.Function{}
	for _, name := range functionNames {
		fn[name] = cloudtest.StartFunction(t, rie, bins[name], functionEnv(w, name))
	}
	invoke := func(t *testing.T, name string, event []byte) []byte {
		t.Helper()
		out, err := fn[name].Invoke(event)
		if err != nil {
			t.Fatalf("invoke %s: %v\nlogs:\n%s", name, err, fn[name].Logs())
		}
		return out
	}
	noFailures := func(t *testing.T, name string, out []byte) {
		t.Helper()
		var resp struct {
			BatchItemFailures []map[string]string `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s response = %s, want no batch item failures\nlogs:\n%s", name, out, fn[name].Logs())
		}
	}
	ok := t.Run("planner", func(t *testing.T) {
		noFailures(t, "planner", invoke(t, "planner", readEvent(t, "planner.json")))
		r, err := w.recs.Runs.Run(w.ctx, w.runID)
		must(t, err, "read run")
		if r.Status != run.Queued || !r.Planned {
			t.Errorf("run after planner: %s planned=%v, want queued and planned", r.Status, r.Planned)
		}
		slots := w.receive("slots")
		want := sqsBody(t, readEvent(t, "dispatcher.json"))
		if len(slots) != 1 || slots[0].Body != want {
			t.Errorf("slots queue after planner = %+v, want the one message of events/dispatcher.json %s", slots, want)
		}
	}) && t.Run("dispatcher", func(t *testing.T) {
		noFailures(t, "dispatcher", invoke(t, "dispatcher", readEvent(t, "dispatcher.json")))
		var ops []string
		for _, r := range w.env.ECS.Requests("") {
			ops = append(ops, r.Op)
		}
		// The task definition for (image digest, size) is looked up first and
		// registered because this is its first launch.
		if diff := cmp.Diff([]string{"DescribeTaskDefinition", "RegisterTaskDefinition", "RunTask"}, ops); diff != "" {
			t.Errorf("ECS calls (-want +got):\n%s", diff)
		}
		spec, req := w.launchedSpec()
		if req.Body["startedBy"] != w.runID || req.Body["launchType"] != "FARGATE" || spec.SlotID != "0/csv-summary/1" {
			t.Errorf("RunTask = %v, want a Fargate task started by %s for slot 0/csv-summary/1", req.Body, w.runID)
		}
		sl, err := w.recs.Runs.Slot(w.ctx, w.runID, spec.SlotID)
		must(t, err, "read slot")
		if sl.Status != run.SlotRunning || !strings.HasPrefix(sl.SandboxID, "arn:aws:ecs:") {
			t.Errorf("slot after dispatch: %s sandbox %q, want running in an ECS task", sl.Status, sl.SandboxID)
		}
	}) && t.Run("watchdog", func(t *testing.T) {
		invoke(t, "watchdog", readEvent(t, "watchdog.json"))
		lists := w.env.ECS.Requests("ListTasks")
		if len(lists) != 1 || lists[0].Body["startedBy"] != w.runID {
			t.Errorf("ListTasks calls = %v, want one for the running run %s", lists, w.runID)
		}
		if stops := w.env.ECS.Requests("StopTask"); len(stops) != 0 {
			t.Errorf("watchdog stopped %v; the sandbox is within its deadline", stops)
		}
	}) && t.Run("grader", func(t *testing.T) {
		spec, _ := w.launchedSpec()
		w.uploadResult(spec)
		noFailures(t, "grader", invoke(t, "grader", readEvent(t, "grader-sqs.json")))
		results := w.receive("results")
		if len(results) != 1 || !strings.Contains(results[0].Body, `"outcome":"passed"`) || !strings.Contains(results[0].Body, w.runID) {
			t.Errorf("results queue after grader = %+v, want one passed result of %s", results, w.runID)
		}
	}) && t.Run("ingester", func(t *testing.T) {
		noFailures(t, "ingester", invoke(t, "ingester", readEvent(t, "ingester.json")))
		res, err := w.recs.Runs.Result(w.ctx, w.runID, "0/csv-summary/1", 0)
		must(t, err, "read result")
		r, err := w.recs.Runs.Run(w.ctx, w.runID)
		must(t, err, "read run")
		if res.Outcome != run.Passed || r.Status != run.Finished {
			t.Errorf("after ingester: result %s, run %s; want passed and finished", res.Outcome, r.Status)
		}
	}) && t.Run("leaderboard", func(t *testing.T) {
		noFailures(t, "leaderboard", invoke(t, "leaderboard", readEvent(t, "leaderboard.json")))
		m, err := w.recs.Runs.RunMetrics(w.ctx, w.runID)
		must(t, err, "read run metrics")
		if m.Results != 1 || len(m.Agents) != 1 || m.Agents[0].Harness != "oracle" {
			t.Errorf("run metrics = %+v, want 1 result of the oracle agent", m)
		}
		_, err = w.recs.Boards.LeaderboardHead(w.ctx, sampleWS, "demo-bench")
		must(t, err, "read leaderboard")
	}) && t.Run("registrysync", func(t *testing.T) {
		noFailures(t, "registrysync", invoke(t, "registrysync", readEvent(t, "registrysync.json")))
		m := decodeSyncMessage(t, sqsBody(t, readEvent(t, "registrysync.json")))
		b, err := w.recs.Benchmarks.Benchmark(w.ctx, m.Workspace, m.Key)
		must(t, err, "read benchmark")
		// The demo tasks' images were built when the world was seeded (the
		// same build keys), so this sync finds them pushed; a sync that
		// parks on builds is finished by the resume it sends.
		if b.Status == records.SyncSyncing {
			if b.Phase != records.SyncPhaseImages {
				t.Fatalf("benchmark %s after the first sync: %s %s %d/%d, want ready or parked at preparing images", m.Key, b.Status, b.Phase, b.Synced, b.Total)
			}
			resume := w.receiveWithin("sync", 30*time.Second)
			if len(resume) != 1 || decodeSyncMessage(t, resume[0].Body).Resume == nil {
				t.Fatalf("sync queue after the parked sync = %+v, want its resume", resume)
			}
			event, err := json.Marshal(sqsEvent("sync", resume[0]))
			must(t, err, "encode resume event")
			noFailures(t, "registrysync", invoke(t, "registrysync", event))
			b, err = w.recs.Benchmarks.Benchmark(w.ctx, m.Workspace, m.Key)
			must(t, err, "read benchmark")
		}
		if b.Status != records.SyncReady || b.Synced != 15 || m.Key != benchmark.KeyFor("demo-bench", "1.0") {
			t.Errorf("benchmark %s after sync: %s %d/%d, want ready 15/15", m.Key, b.Status, b.Synced, b.Total)
		}
		// The scheduled event enqueues a refresh of every synced benchmark
		// (the managed catalog's and the one just synced); the SQS path
		// carries them out, and the unchanged examples keep their versions.
		var enqueued struct {
			Enqueued int `json:"enqueued"`
		}
		out := invoke(t, "registrysync", readEvent(t, "registrysync-schedule.json"))
		if err := json.Unmarshal(out, &enqueued); err != nil || enqueued.Enqueued != 2 {
			t.Fatalf("scheduled refresh answered %s, want 2 enqueued\nlogs:\n%s", out, fn["registrysync"].Logs())
		}
		refreshes := w.receive("sync")
		if len(refreshes) != 2 {
			t.Fatalf("sync queue after the scheduled refresh = %+v, want 2 refresh messages", refreshes)
		}
		for _, r := range refreshes {
			rm := decodeSyncMessage(t, r.Body)
			before, err := w.recs.Benchmarks.Benchmark(w.ctx, rm.Workspace, rm.Key)
			must(t, err, "read benchmark")
			synced, err := w.recs.Benchmarks.RefreshState(w.ctx, rm.Workspace, rm.Key)
			must(t, err, "read sync state")
			event, err := json.Marshal(sqsEvent("sync", r))
			must(t, err, "encode refresh event")
			noFailures(t, "registrysync", invoke(t, "registrysync", event))
			after, err := w.recs.Benchmarks.Benchmark(w.ctx, rm.Workspace, rm.Key)
			must(t, err, "read benchmark")
			st, err := w.recs.Benchmarks.RefreshState(w.ctx, rm.Workspace, rm.Key)
			must(t, err, "read sync state")
			if !rm.Refresh || after.Status != records.SyncReady || after.ReadyVersion != before.ReadyVersion ||
				after.ReadyDigest != before.ReadyDigest || !st.LastSynced.After(synced.LastSynced) || st.RefreshError != "" {
				t.Errorf("refresh of %s/%s: %+v then %+v, sync state %+v; want ready at the same version with a later last sync",
					rm.Workspace, rm.Key, before, after, st)
			}
		}
	}) && t.Run("api", func(t *testing.T) {
		sample := readEvent(t, "api.json")
		call := func(token string) events.APIGatewayV2HTTPResponse {
			var ev events.APIGatewayV2HTTPRequest
			must(t, json.Unmarshal(sample, &ev), "decode events/api.json")
			ev.Headers["authorization"] = "Bearer " + token // the sample's token is signed by a key of no test
			body, err := json.Marshal(ev)
			must(t, err, "encode event")
			var resp events.APIGatewayV2HTTPResponse
			must(t, json.Unmarshal(invoke(t, "api", body), &resp), "decode api response")
			return resp
		}
		resp := call(w.issuer.token(t, w.issuer.claims(sampleWS)))
		var got struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(resp.Body), &got) != nil || got.ID != w.runID || got.Status != "finished" {
			t.Errorf("GET run = %d %s, want 200 with finished run %s", resp.StatusCode, resp.Body, w.runID)
		}
		if resp := call(w.issuer.token(t, w.issuer.claims("ws-other"))); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET run from another workspace = %d %s, want 404", resp.StatusCode, resp.Body)
		}
		expired := w.issuer.claims(sampleWS)
		expired["exp"] = 1764418000
		if resp := call(w.issuer.token(t, expired)); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Body, "token expired") {
			t.Errorf("GET run with an expired token = %d %s, want 401 saying it expired", resp.StatusCode, resp.Body)
		}
	})
	if !ok {
		t.Log("a step failed; later steps depend on it and were not run")
	}
}

// TestColdStartFailsNamingTheVariable runs the planner without its queue
// URL: the cold start fails and the log names the variable.
func TestColdStartFailsNamingTheVariable(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rie := cloudtest.RIE(t, root)
	bins := cloudtest.BuildFunctions(t, root, "planner")
	f := cloudtest.StartFunction(t, rie, bins["planner"], map[string]string{
		cloud.EnvStage: "test", cloud.EnvTable: "t", "AWS_REGION": "us-east-1",
	})
	if _, err := f.Invoke([]byte(`{"Records":[]}`)); err == nil {
		t.Fatal("invoke succeeded without GAUNTLET_SLOTS_QUEUE_URL")
	}
	if logs, ok := f.LogsContaining("GAUNTLET_SLOTS_QUEUE_URL is not set", time.Minute); !ok {
		t.Errorf("logs do not name the missing variable:\n%s", logs)
	}
}
