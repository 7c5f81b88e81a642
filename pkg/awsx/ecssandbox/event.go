package ecssandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// ErrNotSandbox reports an ECS event that is not about a stopped gauntlet
// sandbox (another status, or a task without a slot spec); the grader ignores it.
var ErrNotSandbox = errors.New("not a stopped gauntlet sandbox")

type taskStateChange struct {
	ClusterArn    string    `json:"clusterArn"`
	TaskArn       string    `json:"taskArn"`
	LastStatus    string    `json:"lastStatus"`
	StopCode      string    `json:"stopCode"`
	StoppedReason string    `json:"stoppedReason"`
	CreatedAt     time.Time `json:"createdAt"`
	StartedAt     time.Time `json:"startedAt"`
	StoppedAt     time.Time `json:"stoppedAt"`
	Containers    []struct {
		Name     string `json:"name"`
		ExitCode *int   `json:"exitCode"`
		Reason   string `json:"reason"`
	} `json:"containers"`
	Overrides struct {
		ContainerOverrides []struct {
			Name        string `json:"name"`
			Environment []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"environment"`
		} `json:"containerOverrides"`
	} `json:"overrides"`
}

// CompletionFromEvent decodes an EventBridge "ECS Task State Change" event
// into the completion of the sandbox it reports. Stop codes map to reasons:
// TaskFailedToStart → FailedToStart; UserInitiated → UserStopped;
// EssentialContainerExited → Exited with the task container's exit code (no
// exit code → Lost); anything else (ServiceSchedulerInitiated,
// SpotInterruption, TerminationNotice) → Lost. All but a clean Exited are
// infrastructure errors to the grader.
func CompletionFromEvent(ev events.CloudWatchEvent) (sandbox.Completion, error) {
	if ev.Source != "aws.ecs" || ev.DetailType != "ECS Task State Change" {
		return sandbox.Completion{}, fmt.Errorf("event %s from %s (%s): %w", ev.ID, ev.Source, ev.DetailType, ErrNotSandbox)
	}
	var d taskStateChange
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return sandbox.Completion{}, fmt.Errorf("decode ecs event %s: %w", ev.ID, err)
	}
	if d.LastStatus != "STOPPED" {
		return sandbox.Completion{}, fmt.Errorf("task %s is %s: %w", d.TaskArn, d.LastStatus, ErrNotSandbox)
	}
	var spec sandbox.Spec
	found := false
	for _, o := range d.Overrides.ContainerOverrides {
		for _, e := range o.Environment {
			if o.Name == TaskContainer && e.Name == sandbox.SpecEnv {
				if err := json.Unmarshal([]byte(e.Value), &spec); err != nil {
					return sandbox.Completion{}, fmt.Errorf("task %s: decode slot spec: %w", d.TaskArn, err)
				}
				found = true
			}
		}
	}
	if !found {
		return sandbox.Completion{}, fmt.Errorf("task %s has no %s override: %w", d.TaskArn, sandbox.SpecEnv, ErrNotSandbox)
	}
	c := sandbox.Completion{
		SandboxID: d.TaskArn, LaunchID: spec.LaunchID, Workspace: spec.Workspace,
		RunID: spec.RunID, SlotID: spec.SlotID, Generation: spec.Generation,
		StartedAt: d.StartedAt, StoppedAt: d.StoppedAt, Message: d.StoppedReason,
	}
	if c.StartedAt.IsZero() {
		c.StartedAt = d.CreatedAt
	}
	switch d.StopCode {
	case "TaskFailedToStart":
		c.Reason = sandbox.FailedToStart
	case "UserInitiated":
		c.Reason = sandbox.UserStopped
	case "EssentialContainerExited":
		c.Reason = sandbox.Lost
		for _, ct := range d.Containers {
			if ct.Name == TaskContainer && ct.ExitCode != nil {
				c.Reason, c.ExitCode = sandbox.Exited, *ct.ExitCode
				if ct.Reason != "" {
					c.Message = ct.Reason
				}
			}
		}
	default:
		c.Reason = sandbox.Lost
	}
	return c, nil
}
