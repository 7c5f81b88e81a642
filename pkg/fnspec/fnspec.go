// Package fnspec is the table of gauntlet's functions, written once as data.
//
// Each row names a function (one Lambda in the cloud, one loop of `gauntlet
// local`), what triggers it, the ports it uses and how (read or write), the
// settings it reads, its timeout and its memory. The AWS wiring
// (pkg/awsx/cloud) reads it to decide which ports to build, the CDK app
// (infra) to derive each function's environment, triggers and IAM grants,
// and the local platform to name the queue each loop consumes, so what a
// function may do and what it is wired with cannot drift apart.
package fnspec

import (
	"slices"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
)

// Trigger is what invokes a function.
type Trigger string

// Triggers.
const (
	// API is an HTTP request (API Gateway in the cloud, the local server).
	API Trigger = "api"
	// Queue is a batch of messages of the function's Source queue.
	Queue Trigger = "queue"
	// Stream is a batch of the table's change records.
	Stream Trigger = "stream"
	// Schedule is a timer (EventBridge Scheduler; a ticker locally).
	Schedule Trigger = "schedule"
)

// Port is a resource a function uses.
type Port string

// Ports. For each, Read and Write mean:
const (
	// Table: Read gets and queries items; Write also puts, updates and
	// deletes them and runs transactions.
	Table Port = "table"
	// PlanQueue … SyncQueue: Write sends messages. Consuming a function's
	// own Source queue comes with its trigger.
	PlanQueue        Port = "plan"
	SlotsQueue       Port = "slots"
	CompletionsQueue Port = "completions"
	ResultsQueue     Port = "results"
	SyncQueue        Port = "sync"
	// Blobs: Read gets objects, Write puts them, under Use.Prefixes.
	Blobs Port = "blobs"
	// Secrets: Read reads values (to hand them to a sandbox); Write creates,
	// replaces and deletes them without reading any.
	Secrets Port = "secrets"
	// Sandboxes: Read lists, describes and stops sandboxes; Write also
	// launches them.
	Sandboxes Port = "sandboxes"
	// SandboxKey: Write generates the data key that seals a launch's secrets.
	SandboxKey Port = "sandbox-key"
)

// Queues are the queue ports.
var Queues = []Port{PlanQueue, SlotsQueue, CompletionsQueue, ResultsQueue, SyncQueue}

// Access is how a function uses a port.
type Access uint8

// Accesses; ReadWrite is both.
const (
	Read Access = 1 << iota
	Write
	ReadWrite = Read | Write
)

// Use is one use of a port by a function.
type Use struct {
	Port   Port
	Access Access
	// Prefixes scope a Blobs use to keys under them.
	Prefixes []string
}

// Setting is a configuration value a function reads besides its ports.
type Setting string

// Settings.
const (
	// JWT is the issuer and audience of the API's tokens.
	JWT Setting = "jwt"
	// Registry is where benchmarks are added from.
	Registry Setting = "registry"
	// Refresh is the age of a last sync that makes the scheduled refresh
	// re-sync a benchmark.
	Refresh Setting = "refresh"
	// Images is how task images are pinned and built: the CodeBuild
	// project, the task-images repository, the registry mirrors and the
	// default image.
	Images Setting = "images"
	// MaxSandboxes is the global sandbox cap (the dispatcher's gate).
	MaxSandboxes Setting = "max-sandboxes"
	// ConsoleOrigin is the web console's origin (CORS).
	ConsoleOrigin Setting = "console-origin"
	// ModelGateway is the operator's model gateway config: submit checks
	// models against it, the dispatcher hands it (and the hosted key's
	// secret) to the sandbox tasks.
	ModelGateway Setting = "model-gateway"
)

// Function is one row of the table.
type Function struct {
	// Name is the function's name: its directory under functions/.
	Name string
	// Handler names the handler the function runs.
	Handler string
	// Description says what triggers the function and what it does.
	Description string
	Trigger     Trigger
	// Source is the queue a Queue function consumes.
	Source Port
	// Scheduled functions are also invoked by a schedule (besides Trigger).
	Scheduled bool
	Uses      []Use
	Settings  []Setting
	// Timeout bounds one invocation; a consumed queue's visibility timeout
	// derives from it.
	Timeout time.Duration
	// MemoryMB is the memory size (0: the default).
	MemoryMB int
	// Singleton functions run one invocation at a time: overlapping sweeps
	// or syncs only contend.
	Singleton bool
}

// Access returns how f uses port p (0: not at all).
func (f Function) Access(p Port) Access {
	var a Access
	for _, u := range f.Uses {
		if u.Port == p {
			a |= u.Access
		}
	}
	return a
}

// Prefixes returns the blob prefixes f may use with access a.
func (f Function) Prefixes(a Access) []string {
	var out []string
	for _, u := range f.Uses {
		if u.Port == Blobs && u.Access&a != 0 {
			out = append(out, u.Prefixes...)
		}
	}
	return out
}

// Asynchronous reports whether f is invoked asynchronously (by a schedule).
func (f Function) Asynchronous() bool { return f.Trigger == Schedule || f.Scheduled }

// Reads reports whether f reads setting s.
func (f Function) Reads(s Setting) bool { return slices.Contains(f.Settings, s) }

// The functions. The pipeline ports of each are those of the stage it
// builds (the fields of pipeline.GraderPorts and its siblings; the API
// builds the Submitter and the Stopper), which TestStagePortsMatchTable in
// pkg/awsx/cloud checks both ways; the rest are the API's own (sync queue,
// secret values it stores, downloads), the sync's, or the ECS driver's the
// dispatcher launches through (task files, sealed launch secrets and their
// data key).
var (
	APIFunction = Function{
		Name: "api", Handler: "api.Handler", Trigger: API,
		Description: "HTTP API (API Gateway payload v2)",
		Uses: []Use{{Port: Table, Access: ReadWrite}, {Port: PlanQueue, Access: Write}, {Port: SyncQueue, Access: Write},
			{Port: Secrets, Access: Write},
			{Port: Blobs, Access: Read, Prefixes: []string{blob.RunsPrefix, blob.DownloadsPrefix}},
			{Port: Blobs, Access: Write, Prefixes: []string{blob.DownloadsPrefix}}},
		Settings: []Setting{JWT, Registry, ConsoleOrigin, ModelGateway},
		Timeout:  29 * time.Second, // API Gateway's integration limit is 30 s
		MemoryMB: 512,
	}
	Planner = Function{
		Name: "planner", Handler: "pipeline HandlePlan", Trigger: Queue, Source: PlanQueue,
		Description: "plan queue: fans a run out into slots",
		Uses: []Use{{Port: Table, Access: ReadWrite}, {Port: SlotsQueue, Access: Write},
			{Port: PlanQueue, Access: Write}, // a stopping run with more queued slots than one drain cancels continues in a new plan message
			{Port: Sandboxes, Access: Read}},
		Timeout: 2 * time.Minute, MemoryMB: 512,
	}
	Dispatcher = Function{
		Name: "dispatcher", Handler: "pipeline HandleSlot", Trigger: Queue, Source: SlotsQueue,
		Description: "slots queue: launches sandboxes within the concurrency limits",
		Uses: []Use{{Port: Table, Access: ReadWrite},
			{Port: SlotsQueue, Access: Write},       // re-queue with a delay
			{Port: CompletionsQueue, Access: Write}, // a sandbox that failed to start
			{Port: ResultsQueue, Access: Write},     // a slot whose sandbox cannot be prepared (a deleted secret, a missing task)
			{Port: Secrets, Access: Read}, {Port: SandboxKey, Access: Write}, {Port: Sandboxes, Access: Write},
			{Port: Blobs, Access: Write, Prefixes: []string{blob.RunsPrefix, blob.LaunchesPrefix}},
			{Port: Blobs, Access: Read, Prefixes: []string{blob.RunsPrefix, blob.TasksPrefix, blob.LaunchesPrefix}}},
		Settings: []Setting{MaxSandboxes, ModelGateway},
		Timeout:  time.Minute,
	}
	Grader = Function{
		Name: "grader", Handler: "pipeline HandleCompletion", Trigger: Queue, Source: CompletionsQueue,
		Description: "completions queue (ECS task stopped, failed launches, lost sandboxes): grades onto the results queue",
		Uses: []Use{{Port: Table, Access: Read}, {Port: ResultsQueue, Access: Write},
			{Port: Blobs, Access: Read, Prefixes: []string{blob.RunsPrefix}}},
		Timeout: 2 * time.Minute, MemoryMB: 512,
	}
	Ingester = Function{
		Name: "ingester", Handler: "pipeline HandleResult", Trigger: Queue, Source: ResultsQueue,
		Description: "results queue: records slot results",
		Uses: []Use{{Port: Table, Access: ReadWrite},
			{Port: SlotsQueue, Access: Write}}, // retries of infrastructure errors
		Timeout: time.Minute,
	}
	Leaderboard = Function{
		Name: "leaderboard", Handler: "pipeline Recompute", Trigger: Stream,
		Description: "table stream: recomputes leaderboards",
		Uses:        []Use{{Port: Table, Access: ReadWrite}},
		Timeout:     2 * time.Minute, MemoryMB: 1024,
	}
	RegistrySync = Function{
		Name: "registrysync", Handler: "benchsync HandleSync", Trigger: Queue, Source: SyncQueue,
		Description: "sync queue and hourly schedule: syncs benchmark registries",
		Uses: []Use{{Port: Table, Access: ReadWrite}, {Port: SyncQueue, Access: Write},
			{Port: Secrets, Access: Read}, // the registry credentials a benchmark names
			{Port: Blobs, Access: Write, Prefixes: []string{blob.TasksPrefix, blob.BuildsPrefix}}}, // task bundles; build contexts and logs
		Settings: []Setting{Registry, Refresh, Images},
		Timeout:  10 * time.Minute, MemoryMB: 1024, Singleton: true, Scheduled: true,
	}
	Watchdog = Function{
		Name: "watchdog", Handler: "pipeline Watch", Trigger: Schedule,
		Description: "every minute: stops overdue sandboxes, re-queues stuck slots",
		Uses: []Use{{Port: Table, Access: ReadWrite}, {Port: PlanQueue, Access: Write}, {Port: SlotsQueue, Access: Write},
			{Port: CompletionsQueue, Access: Write}, // a lost sandbox
			{Port: Sandboxes, Access: Read}},
		Timeout:   50 * time.Second, // shorter than its one-minute schedule
		Singleton: true,
	}
)

// Functions is every function, in deployment order.
var Functions = []Function{APIFunction, Planner, Dispatcher, Grader, Ingester, Leaderboard, RegistrySync, Watchdog}

// Lookup returns the function named name.
func Lookup(name string) (Function, bool) {
	i := slices.IndexFunc(Functions, func(f Function) bool { return f.Name == name })
	if i < 0 {
		return Function{}, false
	}
	return Functions[i], true
}

// Consumer returns the function that consumes queue q.
func Consumer(q Port) (Function, bool) {
	i := slices.IndexFunc(Functions, func(f Function) bool { return f.Trigger == Queue && f.Source == q })
	if i < 0 {
		return Function{}, false
	}
	return Functions[i], true
}
