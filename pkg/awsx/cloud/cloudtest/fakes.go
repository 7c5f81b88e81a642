// Package cloudtest holds fakes and fixtures for tests of the cloud shape.
//
// It gives tests of the cloud shape what no emulator on this
// machine provides: an ECS and a Secrets Manager that speak their JSON 1.1
// protocols to the real SDK clients (httptest servers), a fresh set of
// emulator resources (table with stream, queues with dead-letter queues,
// bucket) per environment, and the Lambda runtime interface emulator.
package cloudtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one recorded API call.
type Request struct {
	Op   string
	Body map[string]any
}

// ECS is an httptest server speaking enough of ECS's JSON 1.1 protocol for
// the sandbox driver: RegisterTaskDefinition (a new revision per call) and
// DescribeTaskDefinition (the latest, or ECS's ClientException for an
// unknown family; a registration ECS would refuse is refused, see
// CheckTaskDefinition), RunTask (idempotent by clientToken; the containers
// start in dependsOn order, see Started), StopTask, ListTasks (by startedBy and desiredStatus) and
// DescribeTasks (with the launch tags, overrides, stop code and exit code).
type ECS struct {
	URL string

	mu       sync.Mutex
	requests []Request
	tasks    map[string]*ecsTask       // by task ARN
	byToken  map[string]string         // clientToken → task ARN
	families map[string]int            // family → latest revision
	defs     map[string]map[string]any // task definition ARN → registration
}

type ecsTask struct {
	arn, startedBy, status string
	stopCode               string
	exitCode               *int
	created, stopped       time.Time
	tags                   []any
	overrides              any
	// started is the order the task's containers started in (StartOrder).
	started []string
	// gone: ECS no longer describes the task at all.
	gone bool
}

// NewECS starts the server; it stops when the test ends.
func NewECS(t testing.TB) *ECS {
	e := &ECS{tasks: map[string]*ecsTask{}, byToken: map[string]string{}, families: map[string]int{}, defs: map[string]map[string]any{}}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}

// Requests returns the recorded calls of op ("" = all).
func (e *ECS) Requests(op string) []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Request
	for _, r := range e.requests {
		if op == "" || r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// Started returns the order in which ECS started the task's containers,
// by its definition's dependsOn (nil for a task of a definition the fake
// did not register).
func (e *ECS) Started(taskARN string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.tasks[taskARN]; ok {
		return t.started
	}
	return nil
}

// TaskARNs lists the tasks RunTask started, sorted.
func (e *ECS) TaskARNs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	arns := make([]string, 0, len(e.tasks))
	for arn := range e.tasks {
		arns = append(arns, arn)
	}
	sort.Strings(arns)
	return arns
}

// LoseRunning makes every running task vanish, as a Fargate task lost
// with its STOPPED event that ECS no longer describes either: ListTasks
// lists it under no status, DescribeTasks does not know it, and nothing
// reaches the completions queue. It returns their ARNs.
func (e *ECS) LoseRunning() []string {
	return e.endRunning(func(t *ecsTask) { t.gone = true })
}

// ExitRunning ends every running task as its task container exiting with
// code, without its STOPPED event (EventBridge or the completions queue
// dropped it): ECS lists and describes it as stopped, with stop code
// EssentialContainerExited and the container's exit code, as for about an
// hour after a real task stops. It returns their ARNs.
func (e *ECS) ExitRunning(code int) []string {
	return e.endRunning(func(t *ecsTask) {
		t.stopCode, t.exitCode, t.stopped = "EssentialContainerExited", &code, time.Now().UTC()
	})
}

// endRunning stops every running task, as end says, without an event, and
// returns their ARNs.
func (e *ECS) endRunning(end func(*ecsTask)) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var arns []string
	for _, t := range e.tasks {
		if t.status == "RUNNING" {
			t.status = "STOPPED"
			end(t)
			arns = append(arns, t.arn)
		}
	}
	return arns
}

func (e *ECS) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonEC2ContainerServiceV20141113.")
	req, ok := readJSON(w, r)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, Request{Op: op, Body: req})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch op {
	case "RegisterTaskDefinition":
		family, _ := req["family"].(string)
		if err := CheckTaskDefinition(req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"__type": "ClientException", "message": err.Error()})
			return
		}
		e.families[family]++
		arn := fmt.Sprintf("arn:aws:ecs:us-east-1:111122223333:task-definition/%s:%d", family, e.families[family])
		e.defs[arn] = req
		writeJSON(w, map[string]any{"taskDefinition": map[string]any{"family": family, "status": "ACTIVE", "taskDefinitionArn": arn}})
	case "DescribeTaskDefinition":
		family, _ := req["taskDefinition"].(string)
		rev, ok := e.families[family]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"__type": "ClientException", "message": "Unable to describe task definition."})
			return
		}
		writeJSON(w, map[string]any{"taskDefinition": map[string]any{"family": family, "status": "ACTIVE",
			"taskDefinitionArn": fmt.Sprintf("arn:aws:ecs:us-east-1:111122223333:task-definition/%s:%d", family, rev)}})
	case "RunTask":
		token, _ := req["clientToken"].(string)
		arn, ok := e.byToken[token]
		if !ok {
			arn = fmt.Sprintf("arn:aws:ecs:us-east-1:111122223333:task/gauntlet-test/%032d", len(e.tasks)+1)
			startedBy, _ := req["startedBy"].(string)
			tags, _ := req["tags"].([]any)
			task := &ecsTask{arn: arn, startedBy: startedBy, status: "RUNNING", created: time.Now().UTC(), tags: tags, overrides: req["overrides"]}
			if def, ok := e.defs[fmt.Sprint(req["taskDefinition"])]; ok {
				order, err := StartOrder(def)
				if err != nil {
					w.WriteHeader(http.StatusBadRequest)
					writeJSON(w, map[string]any{"__type": "ClientException", "message": err.Error()})
					return
				}
				task.started = order
			}
			e.tasks[arn] = task
			e.byToken[token] = arn
		}
		writeJSON(w, map[string]any{"tasks": []any{e.describe(e.tasks[arn])}, "failures": []any{}})
	case "StopTask":
		arn, _ := req["task"].(string)
		if t, ok := e.tasks[arn]; ok && t.status != "STOPPED" {
			t.status, t.stopCode, t.stopped = "STOPPED", "UserInitiated", time.Now().UTC()
		}
		writeJSON(w, map[string]any{"task": map[string]any{"taskArn": arn, "lastStatus": "STOPPED"}})
	case "ListTasks":
		startedBy, _ := req["startedBy"].(string)
		desired, _ := req["desiredStatus"].(string)
		if desired == "" {
			desired = "RUNNING" // ECS's default
		}
		arns := []string{}
		for _, t := range e.tasks {
			if !t.gone && t.status == desired && (startedBy == "" || t.startedBy == startedBy) {
				arns = append(arns, t.arn)
			}
		}
		writeJSON(w, map[string]any{"taskArns": arns})
	case "DescribeTasks":
		arns, _ := req["tasks"].([]any)
		out := []any{}
		for _, a := range arns {
			if t, ok := e.tasks[fmt.Sprint(a)]; ok && !t.gone {
				out = append(out, e.describe(t))
			}
		}
		writeJSON(w, map[string]any{"tasks": out, "failures": []any{}})
	default:
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"__type": "InvalidParameterException", "message": "unsupported operation " + op})
	}
}

func (e *ECS) describe(t *ecsTask) map[string]any {
	d := map[string]any{"taskArn": t.arn, "lastStatus": t.status, "desiredStatus": t.status, "startedBy": t.startedBy,
		"createdAt": float64(t.created.UnixMilli()) / 1000, "startedAt": float64(t.created.UnixMilli()) / 1000,
		"tags": t.tags, "overrides": t.overrides}
	if t.stopCode != "" {
		d["stopCode"], d["stoppedAt"] = t.stopCode, float64(t.stopped.UnixMilli())/1000
		container := map[string]any{"name": "task", "lastStatus": "STOPPED"}
		if t.exitCode != nil {
			container["exitCode"] = *t.exitCode
		}
		d["containers"] = []any{container}
	}
	return d
}

// SecretsManager is an httptest server speaking enough of Secrets
// Manager's JSON 1.1 protocol for the secret store: CreateSecret,
// PutSecretValue, GetSecretValue and DeleteSecret, holding values by name.
type SecretsManager struct {
	URL string

	mu       sync.Mutex
	values   map[string]string
	requests []Request
}

// NewSecretsManager starts the server; it stops when the test ends.
func NewSecretsManager(t testing.TB) *SecretsManager {
	s := &SecretsManager{values: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Ops returns the operations called, in order.
func (s *SecretsManager) Ops() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.Op
	}
	return out
}

func (s *SecretsManager) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager.")
	req, ok := readJSON(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Op: op, Body: req})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(kind, msg string) {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"__type": kind, "message": msg})
	}
	id, _ := req["SecretId"].(string)
	arn := func(name string) string { return "arn:aws:secretsmanager:us-east-1:111122223333:secret:" + name }
	switch op {
	case "CreateSecret":
		name, _ := req["Name"].(string)
		if _, ok := s.values[name]; ok {
			fail("ResourceExistsException", "the secret already exists")
			return
		}
		s.values[name], _ = req["SecretString"].(string)
		writeJSON(w, map[string]any{"ARN": arn(name), "Name": name})
	case "PutSecretValue", "GetSecretValue", "DeleteSecret":
		v, ok := s.values[id]
		if !ok {
			fail("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
			return
		}
		switch op {
		case "PutSecretValue":
			s.values[id], _ = req["SecretString"].(string)
			writeJSON(w, map[string]any{"ARN": arn(id), "Name": id})
		case "GetSecretValue":
			writeJSON(w, map[string]any{"ARN": arn(id), "Name": id, "SecretString": v})
		default:
			delete(s.values, id)
			writeJSON(w, map[string]any{"ARN": arn(id), "Name": id})
		}
	default:
		fail("InvalidRequestException", "unsupported operation "+op)
	}
}

func readJSON(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return req, true
}

func writeJSON(w http.ResponseWriter, v any) {
	_ = json.NewEncoder(w).Encode(v)
}
