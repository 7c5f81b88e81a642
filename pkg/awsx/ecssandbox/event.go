package ecssandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// ErrNotSandbox reports an ECS event that is not about a stopped gauntlet
// sandbox (another status, or a task without a slot spec); the grader ignores it.
var ErrNotSandbox = errors.New("not a stopped gauntlet sandbox")

type taskStateChange struct {
	ClusterArn    string           `json:"clusterArn"`
	TaskArn       string           `json:"taskArn"`
	LastStatus    string           `json:"lastStatus"`
	StopCode      string           `json:"stopCode"`
	StoppedReason string           `json:"stoppedReason"`
	CreatedAt     time.Time        `json:"createdAt"`
	StartedAt     time.Time        `json:"startedAt"`
	StoppedAt     time.Time        `json:"stoppedAt"`
	Containers    []containerState `json:"containers"`
	Overrides     struct {
		ContainerOverrides []containerOverride `json:"containerOverrides"`
	} `json:"overrides"`
}

type containerState struct {
	Name     string `json:"name"`
	ExitCode *int   `json:"exitCode"`
	Reason   string `json:"reason"`
}

type containerOverride struct {
	Name        string   `json:"name"`
	Environment []envVar `json:"environment"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
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
	return completionOf(d)
}

// completionOf is the completion of the stopped task d describes, whether
// an event or DescribeTasks described it.
func completionOf(d taskStateChange) (sandbox.Completion, error) {
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

// stateOf is DescribeTasks' description of a task in the shape of the
// task's state-change event.
func stateOf(t types.Task) taskStateChange {
	d := taskStateChange{
		TaskArn: aws.ToString(t.TaskArn), LastStatus: aws.ToString(t.LastStatus), StopCode: string(t.StopCode),
		StoppedReason: aws.ToString(t.StoppedReason), CreatedAt: aws.ToTime(t.CreatedAt), StartedAt: aws.ToTime(t.StartedAt),
		StoppedAt: aws.ToTime(t.StoppedAt),
	}
	for _, c := range t.Containers {
		ct := containerState{Name: aws.ToString(c.Name), Reason: aws.ToString(c.Reason)}
		if c.ExitCode != nil {
			code := int(*c.ExitCode)
			ct.ExitCode = &code
		}
		d.Containers = append(d.Containers, ct)
	}
	if t.Overrides != nil {
		for _, o := range t.Overrides.ContainerOverrides {
			override := containerOverride{Name: aws.ToString(o.Name)}
			for _, e := range o.Environment {
				override.Environment = append(override.Environment, envVar{aws.ToString(e.Name), aws.ToString(e.Value)})
			}
			d.Overrides.ContainerOverrides = append(d.Overrides.ContainerOverrides, override)
		}
	}
	return d
}
