package ecssandbox_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys/kmstest"
)

// fakeECS starts the test's ECS fake; several drivers (dispatchers) may
// share it.
func fakeECS(t *testing.T) (*ecsServer, string, *kmstest.Server) {
	t.Helper()
	srv := &ecsServer{requests: map[string][]map[string]any{}, tasks: map[string]string{}, families: map[string]int{}}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs.URL, kmstest.New(t)
}

// TestTaskDefinitionIsReusedAcrossDispatchers: a second dispatcher (a new
// process, empty cache) finds the family the first registered and runs it;
// only a new size registers another definition.
func TestTaskDefinitionIsReusedAcrossDispatchers(t *testing.T) {
	srv, url, keys := fakeECS(t)
	ctx := context.Background()
	first, second := driverOn(t, url, keys, nil), driverOn(t, url, keys, nil)
	if _, err := first.Launch(ctx, testSpec("launch-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Launch(ctx, testSpec("launch-2")); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests["RegisterTaskDefinition"]); n != 1 {
		t.Fatalf("RegisterTaskDefinition called %d times by two dispatchers for one environment, want 1", n)
	}
	runs := srv.requests["RunTask"]
	if runs[0]["taskDefinition"] != runs[1]["taskDefinition"] {
		t.Fatalf("dispatchers ran %v and %v, want the same definition", runs[0]["taskDefinition"], runs[1]["taskDefinition"])
	}
	bigger := testSpec("launch-3")
	bigger.CPUs, bigger.MemoryMB = 2, 4096
	if _, err := second.Launch(ctx, bigger); err != nil {
		t.Fatal(err)
	}
	regs := srv.requests["RegisterTaskDefinition"]
	if len(regs) != 2 || regs[1]["family"] == regs[0]["family"] || regs[1]["cpu"] != "2048" {
		t.Fatalf("a new size must register a new family; registrations: %v", regs)
	}
	if !strings.HasPrefix(regs[0]["family"].(string), "gauntlet-sandbox-") {
		t.Errorf("family %v lacks the configured prefix", regs[0]["family"])
	}
}

// TestConcurrentLaunchesRegisterOnce: launches of one new environment at
// once in one dispatcher register it once.
func TestConcurrentLaunchesRegisterOnce(t *testing.T) {
	srv, url, keys := fakeECS(t)
	d := driverOn(t, url, keys, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.Launch(context.Background(), testSpec("launch-"+strconv.Itoa(i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n := len(srv.requests["RegisterTaskDefinition"]); n != 1 {
		t.Fatalf("8 concurrent launches registered %d task definitions, want 1", n)
	}
}

// TestLaunchRefusesAnUnpinnedImage: a tag can move under a pinned run, so
// the driver runs digests only and calls nothing for a tag.
func TestLaunchRefusesAnUnpinnedImage(t *testing.T) {
	d, srv, _ := newDriver(t)
	spec := testSpec("launch-1")
	spec.Image = "ghcr.io/example/task:1"
	_, err := d.Launch(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "not pinned to a digest") || !strings.Contains(err.Error(), "task hello") {
		t.Fatalf("Launch with a tag: err = %v, want an error naming the task and the unpinned image", err)
	}
	if len(srv.requests["RegisterTaskDefinition"])+len(srv.requests["RunTask"]) != 0 {
		t.Fatalf("ECS was called for an unpinned image: %v", srv.requests)
	}
}

// TestMirrorsAndAgentBundles: the task image is pulled through the ECR
// pull-through prefix of its registry, by the same digest, and the agent
// bundles arrive read-only at /installed-agent from their init container.
func TestMirrorsAndAgentBundles(t *testing.T) {
	srv, url, keys := fakeECS(t)
	const ecr = "111122223333.dkr.ecr.us-east-1.amazonaws.com"
	d := driverOn(t, url, keys, func(c *ecssandbox.Config) {
		c.Mirrors = map[string]string{"ghcr.io": ecr + "/ghcr", "docker.io": ecr + "/docker-hub"}
		c.AgentsImage = ecr + "/gauntlet-agents@sha256:" + strings.Repeat("a", 64)
	})
	if _, err := d.Launch(context.Background(), testSpec("launch-1")); err != nil {
		t.Fatal(err)
	}
	def := srv.requests["RegisterTaskDefinition"][0]
	containers := map[string]map[string]any{}
	for _, c := range def["containerDefinitions"].([]any) {
		c := c.(map[string]any)
		containers[c["name"].(string)] = c
	}
	task, agents := containers[ecssandbox.TaskContainer], containers[ecssandbox.AgentsContainer]
	if want := ecr + "/ghcr/example/task@" + strings.TrimPrefix(testImage, "ghcr.io/example/task@"); task["image"] != want {
		t.Errorf("task image = %v, want %s", task["image"], want)
	}
	if agents == nil || agents["essential"] != false {
		t.Fatalf("agents-init container = %v, want a non-essential init container", agents)
	}
	var agentMount map[string]any
	for _, m := range task["mountPoints"].([]any) {
		if m := m.(map[string]any); m["containerPath"] == ecssandbox.AgentsMount {
			agentMount = m
		}
	}
	if agentMount == nil || agentMount["readOnly"] != true {
		t.Errorf("task mounts %v: want /installed-agent read-only", task["mountPoints"])
	}
	if cmd := task["command"].([]any); cmd[len(cmd)-2] != "--agent-bundles" || cmd[len(cmd)-1] != ecssandbox.AgentsMount {
		t.Errorf("task command %v: want the runner to read its bundles from %s", cmd, ecssandbox.AgentsMount)
	}
	deps := map[string]any{}
	for _, dep := range task["dependsOn"].([]any) {
		dep := dep.(map[string]any)
		deps[dep["containerName"].(string)] = dep["condition"]
	}
	if diff := cmp.Diff(map[string]any{ecssandbox.RunnerContainer: "SUCCESS", ecssandbox.AgentsContainer: "SUCCESS"}, deps); diff != "" {
		t.Errorf("task dependsOn (-want +got):\n%s", diff)
	}
}

func TestPullRef(t *testing.T) {
	const dg = "@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	mirrors := map[string]string{"docker.io": "e.cr/docker-hub", "ghcr.io": "e.cr/ghcr/"}
	for in, want := range map[string]string{
		"python" + dg:                   "e.cr/docker-hub/library/python" + dg,
		"docker.io/library/python" + dg: "e.cr/docker-hub/library/python" + dg,
		"index.docker.io/org/tool" + dg: "e.cr/docker-hub/org/tool" + dg,
		"ghcr.io/o/r" + dg:              "e.cr/ghcr/o/r" + dg,
		"quay.io/o/r" + dg:              "quay.io/o/r" + dg,
		"localhost:5000/base" + dg:      "localhost:5000/base" + dg,
	} {
		if got := ecssandbox.PullRef(in, mirrors); got != want {
			t.Errorf("PullRef(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestEphemeralStorageHoldsTheTaskStorage: a task whose storage_mb exceeds
// Fargate's default 20 GiB gets a definition (a family of its own) asking
// for that much, rounded up to a GiB; one within the default asks for none;
// one beyond Fargate's 200 GiB is refused before ECS is called.
func TestEphemeralStorageHoldsTheTaskStorage(t *testing.T) {
	srv, url, keys := fakeECS(t)
	d := driverOn(t, url, keys, nil)
	ctx := context.Background()
	for i, c := range []struct {
		storageMB int
		want      any // ephemeralStorage.sizeInGiB; nil = none asked
	}{
		{0, nil},
		{10240, nil},
		{20 * 1024, nil},
		{20*1024 + 1, 21.0},
		{51200, 50.0},
		{200 * 1024, 200.0},
	} {
		spec := testSpec("launch-" + strconv.Itoa(i))
		spec.StorageMB = c.storageMB
		if _, err := d.Launch(ctx, spec); err != nil {
			t.Fatalf("storage_mb %d: %v", c.storageMB, err)
		}
		srv.mu.Lock()
		regs := srv.requests["RegisterTaskDefinition"]
		var got any
		if es, ok := regs[len(regs)-1]["ephemeralStorage"].(map[string]any); ok {
			got = es["sizeInGiB"]
		}
		srv.mu.Unlock()
		if c.want == nil && i > 0 {
			// Within the default: the same environment as no storage_mb.
			if len(regs) != 1 {
				t.Errorf("storage_mb %d registered a new definition; want the default's", c.storageMB)
			}
			continue
		}
		if got != c.want {
			t.Errorf("storage_mb %d: ephemeralStorage.sizeInGiB = %v, want %v", c.storageMB, got, c.want)
		}
	}
	srv.mu.Lock()
	families := map[any]bool{}
	for _, r := range srv.requests["RegisterTaskDefinition"] {
		families[r["family"]] = true
	}
	n := len(srv.requests["RegisterTaskDefinition"])
	srv.mu.Unlock()
	if n != 4 || len(families) != 4 {
		t.Errorf("%d registrations in %d families, want 4 (default, 21, 50, 200 GiB) each its own family", n, len(families))
	}
	huge := testSpec("launch-huge")
	huge.StorageMB = 201 * 1024
	if _, err := d.Launch(ctx, huge); err == nil || !strings.Contains(err.Error(), "ephemeral storage") || !strings.Contains(err.Error(), "task hello") {
		t.Fatalf("storage_mb over 200 GiB: err = %v, want one naming the task and the ephemeral storage", err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if got := len(srv.requests["RegisterTaskDefinition"]); got != n {
		t.Errorf("an impossible storage size registered a definition")
	}
}

// TestInitInstallsTheStaticBinaries: the runner-init container installs the
// image's static helpers (terminus-2) beside the runner, and the task's
// runner serves that directory as its --static-bin-dir.
func TestInitInstallsTheStaticBinaries(t *testing.T) {
	srv, url, keys := fakeECS(t)
	d := driverOn(t, url, keys, nil)
	if _, err := d.Launch(context.Background(), testSpec("launch-1")); err != nil {
		t.Fatal(err)
	}
	containers := map[string][]any{}
	for _, c := range srv.requests["RegisterTaskDefinition"][0]["containerDefinitions"].([]any) {
		c := c.(map[string]any)
		containers[c["name"].(string)] = c["command"].([]any)
	}
	if diff := cmp.Diff([]any{"install", "--static-bin", "/static-bin", "/gauntlet/sandbox-runner"}, containers[ecssandbox.RunnerContainer]); diff != "" {
		t.Errorf("runner-init command (-want +got):\n%s", diff)
	}
	task := containers[ecssandbox.TaskContainer]
	found := false
	for i := range len(task) - 1 {
		if task[i] == "--static-bin-dir" {
			found = task[i+1] == "/gauntlet/bin"
		}
	}
	if !found {
		t.Errorf("task command %v: want --static-bin-dir /gauntlet/bin (where install puts the helpers)", task)
	}
}

// TestModelGatewayReachesTheRunner: the operator's gateway config rides on
// the task container's environment and the hosted key is injected by ECS
// from Secrets Manager (container secrets, never a plain value in the
// definition); another config registers another family.
func TestModelGatewayReachesTheRunner(t *testing.T) {
	srv, url, keys := fakeECS(t)
	const (
		toml = "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_env = \"GAUNTLET_GATEWAY_KEY_HOSTED\"\n"
		arn  = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gauntlet/hosted-key-AbCdEf"
	)
	d := driverOn(t, url, keys, func(c *ecssandbox.Config) {
		c.ModelGatewayConfig = toml
		c.ModelGatewaySecrets = map[string]string{"GAUNTLET_GATEWAY_KEY_HOSTED": arn}
	})
	if _, err := d.Launch(context.Background(), testSpec("launch-1")); err != nil {
		t.Fatal(err)
	}
	var task map[string]any
	for _, c := range srv.requests["RegisterTaskDefinition"][0]["containerDefinitions"].([]any) {
		if c := c.(map[string]any); c["name"] == ecssandbox.TaskContainer {
			task = c
		}
	}
	if diff := cmp.Diff([]any{map[string]any{"name": "GAUNTLET_MODEL_GATEWAY_CONFIG", "value": toml}}, task["environment"]); diff != "" {
		t.Errorf("task environment (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{map[string]any{"name": "GAUNTLET_GATEWAY_KEY_HOSTED", "valueFrom": arn}}, task["secrets"]); diff != "" {
		t.Errorf("task secrets (-want +got):\n%s", diff)
	}

	plain := driverOn(t, url, keys, nil)
	if _, err := plain.Launch(context.Background(), testSpec("launch-2")); err != nil {
		t.Fatal(err)
	}
	regs := srv.requests["RegisterTaskDefinition"]
	if len(regs) != 2 || regs[0]["family"] == regs[1]["family"] {
		t.Fatalf("%d registrations; want a second family for the launch without the gateway config", len(regs))
	}
	for _, c := range regs[1]["containerDefinitions"].([]any) {
		if c := c.(map[string]any); c["environment"] != nil || c["secrets"] != nil {
			t.Errorf("container %v of the plain launch: environment %v, secrets %v; want none", c["name"], c["environment"], c["secrets"])
		}
	}
}
