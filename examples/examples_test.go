package examples

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

const (
	datasetDir  = "demo-bench"
	datasetName = "demo-bench"
	datasetVer  = "1.0"
	agentsDir   = "agents"
	agentScript = "heuristic-agent.sh"
	// agentMount is where `gauntlet local` mounts its --agents-dir.
	agentMount = "/agent"
)

var difficulties = []string{"easy", "medium", "hard"}

// loadTasks loads every task directory of demo-bench with harbor.LoadTask,
// sorted by name.
var loadTasks = sync.OnceValues(func() ([]harbor.Task, error) {
	entries, err := os.ReadDir(datasetDir)
	if err != nil {
		return nil, err
	}
	var tasks []harbor.Task
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		task, err := harbor.LoadTask(filepath.Join(datasetDir, e.Name()))
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, task)
	}
	return tasks, nil
})

func mustTasks(t *testing.T) []harbor.Task {
	t.Helper()
	tasks, err := loadTasks()
	if err != nil {
		t.Fatalf("load demo-bench tasks: %v", err)
	}
	return tasks
}

func taskNames(tasks []harbor.Task) []string {
	names := make([]string, len(tasks))
	for i, task := range tasks {
		names[i] = task.Name
	}
	return names
}

func TestDatasetShape(t *testing.T) {
	tasks := mustTasks(t)
	if len(tasks) < 14 {
		t.Errorf("demo-bench has %d tasks, want at least 14", len(tasks))
	}
	categories := map[string]int{}
	levels := map[string]int{}
	partial := 0
	for _, task := range tasks {
		meta := task.Config.Metadata
		categories[meta.Category()]++
		levels[meta.Difficulty()]++
		if task.Name != filepath.Base(task.Dir) {
			t.Errorf("%s: task name %q differs from its directory name", task.Dir, task.Name)
		}
		if meta.Category() == "" || len(meta.Tags()) == 0 {
			t.Errorf("%s: [metadata] needs category and tags", task.Name)
		}
		if !slices.Contains(difficulties, meta.Difficulty()) {
			t.Errorf("%s: difficulty %q, want one of %v", task.Name, meta.Difficulty(), difficulties)
		}
		if d := task.Config.AgentTimeout(); d <= 0 || d.Seconds() > 120 {
			t.Errorf("%s: agent timeout %v, want in (0, 120s]", task.Name, d)
		}
		if d := task.Config.VerifierTimeout(); d <= 0 || d.Seconds() > 60 {
			t.Errorf("%s: verifier timeout %v, want in (0, 60s]", task.Name, d)
		}
		if task.Config.Environment.NetworkMode != harbor.NetworkNone {
			t.Errorf("%s: network_mode %q, want %q (tasks run offline)", task.Name, task.Config.Environment.NetworkMode, harbor.NetworkNone)
		}
		if !task.HasSolution || !task.HasEnvironment {
			t.Errorf("%s: needs solution/solve.sh and environment/", task.Name)
		}
		for _, rel := range []string{"environment/Dockerfile", seedDir, harbor.TestScript, harbor.SolutionScript} {
			if _, err := os.Stat(filepath.Join(task.Dir, rel)); err != nil {
				t.Errorf("%s: %v", task.Name, err)
			}
		}
		for _, rel := range []string{harbor.TestScript, harbor.SolutionScript} {
			if info, err := os.Stat(filepath.Join(task.Dir, rel)); err == nil && info.Mode()&0o111 == 0 {
				t.Errorf("%s: %s is not executable", task.Name, rel)
			}
		}
		if writesRewardJSON(t, task) {
			partial++
		}
	}
	if len(categories) < 3 {
		t.Errorf("categories %v, want at least 3", categories)
	}
	for _, d := range difficulties {
		if levels[d] == 0 {
			t.Errorf("no %s task (difficulties: %v)", d, levels)
		}
	}
	if partial < 2 {
		t.Errorf("%d tasks write reward.json, want at least 2", partial)
	}
}

func writesRewardJSON(t *testing.T, task harbor.Task) bool {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(task.Dir, harbor.TestScript))
	if err != nil {
		t.Fatalf("read test script: %v", err)
	}
	return strings.Contains(string(script), harbor.RewardJSONFile)
}

func loadRegistry(t *testing.T) harbor.Dataset {
	t.Helper()
	f, err := os.Open("registry.json")
	if err != nil {
		t.Fatalf("open registry: %v", err)
	}
	defer f.Close()
	reg, err := harbor.ParseRegistry(f)
	if err != nil {
		t.Fatalf("parse registry.json: %v", err)
	}
	ds, err := reg.Resolve(datasetName, datasetVer)
	if err != nil {
		t.Fatalf("registry.json: %v", err)
	}
	return ds
}

func TestRegistryListsEveryTask(t *testing.T) {
	tasks := mustTasks(t)
	ds := loadRegistry(t)
	if ds.Description == "" {
		t.Error("registry.json: demo-bench has no description")
	}
	var listed []string
	for _, ref := range ds.Tasks {
		listed = append(listed, ref.Name)
		if ref.GitURL != "" || ref.GitCommitID != "" {
			t.Errorf("task %s: git_url %q, git_commit_id %q; want both empty (path relative to registry.json)", ref.Name, ref.GitURL, ref.GitCommitID)
		}
		task, err := harbor.LoadTask(filepath.FromSlash(ref.Path))
		if err != nil {
			t.Errorf("task %s: path %q: %v", ref.Name, ref.Path, err)
			continue
		}
		if task.Name != ref.Name {
			t.Errorf("registry name %q, task directory %q is named %q", ref.Name, ref.Path, task.Name)
		}
	}
	sort.Strings(listed)
	if diff := cmp.Diff(taskNames(tasks), listed); diff != "" {
		t.Errorf("registry.json tasks differ from demo-bench directories (-dirs +registry):\n%s", diff)
	}
}

// manifestTasks builds the manifest task list the platform would sync.
func manifestTasks(t *testing.T, tasks []harbor.Task) []benchmark.Task {
	t.Helper()
	out := make([]benchmark.Task, len(tasks))
	for i, task := range tasks {
		digest, err := harbor.TaskDigest(task.Dir)
		if err != nil {
			t.Fatalf("digest %s: %v", task.Name, err)
		}
		out[i] = benchmark.Task{
			Name:       task.Name,
			Category:   task.Config.Metadata.Category(),
			Difficulty: task.Config.Metadata.Difficulty(),
			Digest:     digest,
		}
	}
	return out
}

func loadCatalogEntry(t *testing.T) benchmark.CatalogEntry {
	t.Helper()
	data, err := os.ReadFile("catalog.toml")
	if err != nil {
		t.Fatalf("read catalog: %v", err)
	}
	cat, err := benchmark.ParseCatalog(data, "catalog.toml")
	if err != nil {
		t.Fatalf("parse catalog.toml: %v", err)
	}
	entry, ok := cat.Lookup(datasetName)
	if !ok {
		t.Fatalf("catalog.toml has no benchmark with key %q", datasetName)
	}
	return entry
}

func TestCatalogDescribesDemoBench(t *testing.T) {
	tasks := mustTasks(t)
	entry := loadCatalogEntry(t)
	if got, want := entry.Source, datasetName+"@"+datasetVer; got != want {
		t.Errorf("catalog source = %q, want %q", got, want)
	}
	if _, err := os.Stat(entry.Registry); err != nil {
		t.Errorf("catalog registry: %v", err)
	}
	manifest, err := entry.Manifest(datasetVer, manifestTasks(t, tasks))
	if err != nil {
		t.Fatalf("catalog task sets do not fit the tasks: %v", err)
	}
	parity, ok := manifest.TaskSets["parity"]
	if !ok || !parity.Recommended {
		t.Fatalf("catalog needs a recommended parity task set, got %+v", manifest.TaskSets)
	}
	if n := len(parity.Tasks); 3*n < len(tasks) || 3*n > 2*len(tasks) {
		t.Errorf("parity has %d of %d tasks, want about half", n, len(tasks))
	}
	covered := map[string]bool{}
	for _, name := range parity.Tasks {
		task, _ := manifest.Task(name)
		covered[task.Category] = true
		covered[task.Difficulty] = true
	}
	for _, c := range manifest.Categories() {
		if !covered[c.Name] {
			t.Errorf("parity covers no %s task", c.Name)
		}
	}
	for _, d := range difficulties {
		if !covered[d] {
			t.Errorf("parity covers no %s task", d)
		}
	}
}

func TestRunConfigsParse(t *testing.T) {
	entry := loadCatalogEntry(t)
	files, err := filepath.Glob("runs/*.toml")
	if err != nil || len(files) < 3 {
		t.Fatalf("runs/*.toml: %v files, err %v; want demo, oracle and full", files, err)
	}
	configs := map[string]runconfig.Config{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		cfg, err := runconfig.Parse(data)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if cfg.Experiment.Benchmark != datasetName {
			t.Errorf("%s: benchmark %q, want %q", file, cfg.Experiment.Benchmark, datasetName)
		}
		if set := cfg.Tasks.TaskSet; set != "" {
			if _, ok := entry.TaskSets[set]; !ok {
				t.Errorf("%s: task_set %q is not in catalog.toml", file, set)
			}
		}
		configs[filepath.Base(file)] = cfg
	}
	demo := configs["demo.toml"]
	if demo.Execution.AttemptsPerTask != 3 {
		t.Errorf("demo.toml: attempts_per_task = %d, want 3", demo.Execution.AttemptsPerTask)
	}
	var harnesses []string
	for _, a := range demo.Agents {
		harnesses = append(harnesses, a.Harness)
		if a.Harness == runconfig.CommandHarness {
			rel, ok := strings.CutPrefix(a.Command, agentMount+"/")
			if _, err := os.Stat(filepath.Join(agentsDir, rel)); !ok || err != nil {
				t.Errorf("demo.toml: command %q must name a script under %s (examples/%s)", a.Command, agentMount, agentsDir)
			}
		}
	}
	// The demo pits the three offline baselines against a real agent (codex, on the bundled mock model).
	if diff := cmp.Diff([]string{"oracle", "nop", runconfig.CommandHarness, "codex"}, harnesses); diff != "" {
		t.Errorf("demo.toml harnesses (-want +got):\n%s", diff)
	}
}

// readmeRow matches a task row of README.md's task table:
// | [name](demo-bench/name/) | category | difficulty | partial credit |
var readmeRow = regexp.MustCompile(`^\| \[([a-z0-9-]+)\]\(demo-bench/[a-z0-9-]+/\) \| ([a-z-]+) \| (easy|medium|hard) \| (yes|no) \|`)

func TestReadmeListsEveryTask(t *testing.T) {
	tasks := mustTasks(t)
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatalf("open README: %v", err)
	}
	defer f.Close()
	got := map[string][3]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := readmeRow.FindStringSubmatch(sc.Text()); m != nil {
			got[m[1]] = [3]string{m[2], m[3], m[4]}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read README: %v", err)
	}
	want := map[string][3]string{}
	for _, task := range tasks {
		partial := "no"
		if writesRewardJSON(t, task) {
			partial = "yes"
		}
		want[task.Name] = [3]string{task.Config.Metadata.Category(), task.Config.Metadata.Difficulty(), partial}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README.md task table differs from the tasks (-tasks +README):\n%s", diff)
	}
}

func TestOracleSolvesEveryTask(t *testing.T) {
	requireBwrap(t)
	for _, task := range mustTasks(t) {
		t.Run(task.Name, func(t *testing.T) {
			t.Parallel()
			tr := newTrial(t, task)
			solution := mount{host: filepath.Join(task.Dir, "solution"), sandbox: "/solution"}
			if out, err := tr.runAgent(t.Context(), []mount{solution}, nil, "bash", "/solution/solve.sh"); err != nil {
				t.Fatalf("solve.sh: %v\n%s", err, out)
			}
			reward, out, err := tr.runVerifier(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if reward.Value != 1 {
				t.Errorf("oracle reward = %v (%s), want 1\n%s", reward.Value, reward.Source, firstLines(out, 30))
			}
			if wantJSON := writesRewardJSON(t, task); wantJSON != (reward.Source == harbor.RewardJSONFile) {
				t.Errorf("reward came from %s; test.sh mentions reward.json: %v", reward.Source, wantJSON)
			}
		})
	}
}

func TestNopFailsEveryTask(t *testing.T) {
	requireBwrap(t)
	for _, task := range mustTasks(t) {
		t.Run(task.Name, func(t *testing.T) {
			t.Parallel()
			tr := newTrial(t, task)
			reward, out, err := tr.runVerifier(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if reward.Value >= 1 {
				t.Errorf("untouched /app scored %v, want < 1\n%s", reward.Value, firstLines(out, 30))
			}
		})
	}
}

// heuristicRewards are the rewards heuristic-agent.sh earns on the tasks it
// handles deterministically: right, half right (partial credit), or wrong.
var heuristicRewards = map[string]float64{
	"word-frequency":    1,
	"csv-summary":       1,
	"json-transform":    1,
	"fix-median":        1,
	"file-permissions":  1,
	"dedupe-records":    0.6,  // picks the right record but does not fill in phones
	"roman-numerals":    0.75, // from_roman accepts non-canonical numerals
	"extract-ips":       0,    // a dotted-quad regex keeps invalid addresses
	"disk-usage-report": 0,    // du counts directory blocks
	"config-migrate":    0,    // not recognised
	"build-order":       0,
	"cron-next-run":     0,
	"markdown-toc":      0,
}

// heuristicFlaky are the tasks where heuristic-agent.sh succeeds only on some
// seeds.
var heuristicFlaky = []string{"log-error-summary", "lru-cache"}

// usage is /logs/agent/usage.json as the command harness reads it.
type usage struct {
	InputTokens  *int     `json:"input_tokens"`
	CacheTokens  *int     `json:"cache_tokens"`
	OutputTokens *int     `json:"output_tokens"`
	CostUSD      *float64 `json:"cost_usd"`
}

// runHeuristic runs heuristic-agent.sh on task the way the command harness
// does (instruction in $GAUNTLET_INSTRUCTION and /logs/agent/instruction.md,
// the agents directory at /agent) and returns the reward.
func runHeuristic(t *testing.T, task harbor.Task, seed string) float64 {
	t.Helper()
	ctx := t.Context()
	tr := newTrial(t, task)
	if err := os.WriteFile(tr.path("logs/agent/instruction.md"), []byte(task.Instruction), 0o644); err != nil {
		t.Fatalf("write instruction: %v", err)
	}
	abs, err := filepath.Abs(agentsDir)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GAUNTLET_INSTRUCTION": task.Instruction,
		"GAUNTLET_MODEL":       "demo/heuristic-v1",
		"HEURISTIC_SEED":       seed,
	}
	out, err := tr.runAgent(ctx, []mount{{host: abs, sandbox: agentMount}}, env, "bash", "-c", agentMount+"/"+agentScript)
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	if !strings.Contains(out, "[heuristic-agent]") {
		t.Errorf("agent logged nothing to stdout:\n%s", out)
	}
	checkUsage(t, tr.path("logs/agent/usage.json"))
	reward, _, err := tr.runVerifier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return reward.Value
}

func checkUsage(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("usage.json: %v", err)
	}
	var u usage
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		t.Fatalf("usage.json %s: %v", data, err)
	}
	if u.InputTokens == nil || u.CacheTokens == nil || u.OutputTokens == nil || u.CostUSD == nil {
		t.Fatalf("usage.json %s: want input_tokens, cache_tokens, output_tokens and cost_usd", data)
	}
	if *u.InputTokens <= 0 || *u.OutputTokens <= 0 || *u.CacheTokens < 0 || *u.CacheTokens > *u.InputTokens || *u.CostUSD <= 0 {
		t.Errorf("usage.json %s: implausible numbers", data)
	}
}

func TestHeuristicAgent(t *testing.T) {
	requireBwrap(t)
	tasks := mustTasks(t)
	covered := append(slices.Collect(maps.Keys(heuristicRewards)), heuristicFlaky...)
	sort.Strings(covered)
	if diff := cmp.Diff(taskNames(tasks), covered); diff != "" {
		t.Fatalf("every task needs an expectation for the heuristic agent (-tasks +expectations):\n%s", diff)
	}
	t.Run("deterministic", func(t *testing.T) {
		for _, task := range tasks {
			want, ok := heuristicRewards[task.Name]
			if !ok {
				continue
			}
			t.Run(task.Name, func(t *testing.T) {
				t.Parallel()
				if r := runHeuristic(t, task, "1"); r != want {
					t.Errorf("reward = %v, want %v", r, want)
				}
			})
		}
	})
	for _, task := range tasks {
		if !slices.Contains(heuristicFlaky, task.Name) {
			continue
		}
		t.Run("flaky/"+task.Name, func(t *testing.T) {
			t.Parallel()
			passed, failed := 0, 0
			for seed := range 12 {
				if runHeuristic(t, task, strconv.Itoa(seed+1)) == 1 {
					passed++
				} else {
					failed++
				}
			}
			if passed == 0 || failed == 0 {
				t.Errorf("over 12 seeds: %d passes, %d failures; want some of each", passed, failed)
			}
		})
	}
}
