// Package ecssandbox is the ECS Fargate adapter of the sandbox port.
//
// It is the ECS Fargate adapter of the sandbox port, and the
// decoder of EventBridge "ECS Task State Change" events into completions.
//
// Every sandbox is one Fargate task of a task definition registered once per
// distinct environment (image, size). It has two containers: "runner-init"
// copies the sandbox-runner binary from the runner image into a shared volume
// and exits; "task" runs the task's own image as root with the runner as
// entry point, in the runner's container isolation (sandbox.IsolationContainer).
// A task's sidecar services add a container each (sidecars.go), a separate
// verifier a "verifier" container (verifier.go); the definition is
// registered once per distinct shape.
//
// How the runner receives only the slot's secrets, and no platform
// credentials reach the agent's process:
//
//   - Secret values never enter the ECS API. The dispatcher asks KMS for a
//     fresh data key per launch (kms:GenerateDataKey on the stack's sandbox
//     key, encryption context {"gauntlet:launch": <launch id>}), seals the
//     slot's agent and verifier secrets with it (package sealed), stores the
//     sealed object under launches/ and passes only its presigned URL
//     (sealed.URLEnv) and the key's CiphertextBlob (sealed.DataKeyEnv) in
//     the task overrides. Whoever can read the overrides (ecs:DescribeTasks,
//     the EventBridge events) holds a ciphertext and a wrapped key that only
//     kms:Decrypt under that launch's context opens.
//   - The runner, as root in the task container, calls kms:Decrypt with the
//     same encryption context using the task role's credentials, the role's
//     only permission (kms:Decrypt on that key, the context key required).
//     Those credentials come from the container credentials endpoint named
//     by AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, which ECS puts only in the
//     environment of the container's entry point: the runner.
//   - The agent (and the harness's install step) runs under a separate
//     unprivileged uid with no-new-privileges and an environment built from
//     scratch: it never inherits the runner's variables, and another uid
//     cannot read /proc/<runner>/environ or the runner's memory (the runner
//     also scrubs the sensitive variables from its own environ block). It
//     gets only the slot's agent secrets, as variables of their names.
//   - Results go up through presigned PUT URLs the runner holds in memory;
//     the runner keeps its output and the task files in root-only
//     directories, and every process of the agent uid is killed before the
//     tests are unpacked and the verifier runs.
package ecssandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
)

// API is the part of the ECS client the driver uses.
type API interface {
	RegisterTaskDefinition(ctx context.Context, in *ecs.RegisterTaskDefinitionInput, opts ...func(*ecs.Options)) (*ecs.RegisterTaskDefinitionOutput, error)
	RunTask(ctx context.Context, in *ecs.RunTaskInput, opts ...func(*ecs.Options)) (*ecs.RunTaskOutput, error)
	StopTask(ctx context.Context, in *ecs.StopTaskInput, opts ...func(*ecs.Options)) (*ecs.StopTaskOutput, error)
	ListTasks(ctx context.Context, in *ecs.ListTasksInput, opts ...func(*ecs.Options)) (*ecs.ListTasksOutput, error)
	DescribeTasks(ctx context.Context, in *ecs.DescribeTasksInput, opts ...func(*ecs.Options)) (*ecs.DescribeTasksOutput, error)
	DescribeTaskDefinition(ctx context.Context, in *ecs.DescribeTaskDefinitionInput, opts ...func(*ecs.Options)) (*ecs.DescribeTaskDefinitionOutput, error)
}

// Config names the resources the CDK stack created.
type Config struct {
	Cluster          string   // cluster ARN
	Subnets          []string // private subnets with egress
	SecurityGroups   []string // egress-only
	TaskRoleARN      string   // may only kms:Decrypt launch data keys of KMSKey
	ExecutionRoleARN string   // pulls images, writes logs; never visible inside the task
	LogGroup         string
	Region           string
	RunnerImage      string // image holding /sandbox-runner
	Family           string // task definition family prefix, default "gauntlet-sandbox"
	// DefaultImage runs tasks whose environment names no docker_image. Like
	// every task image it must be a digest reference (repo@sha256:…).
	DefaultImage string
	// AgentsImage, when set, holds the prepared agent bundles under
	// /installed-agent; an "agents-init" container copies them into a
	// volume the task container mounts read-only at /installed-agent, so an
	// attempt installs nothing over the network.
	AgentsImage string
	// Mirrors maps a registry host ("docker.io", "ghcr.io") to the
	// repository prefix that fronts it, the ECR pull-through cache rule's
	// "<account>.dkr.ecr.<region>.amazonaws.com/<prefix>", so Fargate pulls
	// the pinned digest from ECR instead of the upstream registry.
	Mirrors map[string]string
	// ModelGatewayConfig is the operator's model gateway TOML; the task
	// container carries it in $GAUNTLET_MODEL_GATEWAY_CONFIG, which the
	// runner reads (and scrubs) when it has no --model-gateway-config file.
	// "" leaves the runner the default provider table.
	ModelGatewayConfig string
	// ModelGatewaySecrets maps runner variables (sandbox.GatewayKeyEnvPrefix…,
	// which the config's hosted.api_key_env names) to the Secrets Manager
	// secret ARNs ECS injects into them (container `secrets`, read with the
	// execution role): the hosted endpoint's key, which the runner takes
	// and scrubs before any phase starts.
	ModelGatewaySecrets map[string]string
	// Sealed stores a launch's sealed secrets; the runner fetches them once
	// through a presigned URL. Required when a launch carries secrets.
	Sealed SealedStore
	// Files presigns the stored files a sandbox reads and writes: the task
	// bundle (spec.Task.BundleKey) and its outputs under spec.Output.Prefix.
	// A Fargate task holds no platform credentials, so it reaches them only
	// through these URLs.
	Files blob.Presigner
	// KMSKey is the sandbox KMS key (ARN) launch data keys come from
	// (GAUNTLET_SANDBOX_KMS_KEY).
	KMSKey string
	// DataKeys issues the per-launch data keys (KMS on KMSKey, see
	// pkg/awsx/kmskeys). Required when a launch carries secrets.
	DataKeys sealed.DataKeySource
	// SealedTTL bounds the presigned URL (default 30 minutes: a Fargate task
	// starts well within it).
	SealedTTL time.Duration
}

// SealedStore is the blob store (and presigner) that holds sealed secrets,
// under launches/<launch id>/<key fingerprint>.sealed. A lifecycle rule
// expires them.
type SealedStore interface {
	Put(ctx context.Context, key string, r io.Reader) error
	PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// Container names in every sandbox task definition.
const (
	RunnerContainer = "runner-init"
	AgentsContainer = "agents-init"
	TaskContainer   = "task"
	runnerMount     = "/gauntlet"
	// runnerImageStaticBin is where the runner image (infra/runner/Dockerfile)
	// holds the platform's static helper binaries.
	runnerImageStaticBin = "/static-bin"
	// AgentsMount is where the agent bundles appear inside the task
	// container (read-only), Harbor's /installed-agent.
	AgentsMount = "/installed-agent"
)

// Driver implements sandbox.Driver on ECS Fargate.
type Driver struct {
	api API
	cfg Config

	mu   sync.Mutex
	defs map[string]*taskDef // by family
}

var _ sandbox.Driver = (*Driver)(nil)

// New returns a driver. It checks the configuration but calls nothing.
func New(api API, cfg Config) (*Driver, error) {
	switch {
	case cfg.Cluster == "":
		return nil, errors.New("ecs sandbox: cluster is empty (GAUNTLET_CLUSTER)")
	case len(cfg.Subnets) == 0:
		return nil, errors.New("ecs sandbox: no subnets (GAUNTLET_SUBNETS)")
	case cfg.RunnerImage == "":
		return nil, errors.New("ecs sandbox: runner image is empty (GAUNTLET_RUNNER_IMAGE)")
	case cfg.ExecutionRoleARN == "":
		return nil, errors.New("ecs sandbox: execution role is empty (GAUNTLET_SANDBOX_EXECUTION_ROLE_ARN)")
	case cfg.DefaultImage != "" && !isDigestRef(cfg.DefaultImage):
		return nil, fmt.Errorf("ecs sandbox: default image %q is not a digest reference (want repo@sha256:<64 hex>) (GAUNTLET_SANDBOX_DEFAULT_IMAGE)", cfg.DefaultImage)
	}
	for host, prefix := range cfg.Mirrors {
		if host == "" || prefix == "" || strings.Contains(host, "/") {
			return nil, fmt.Errorf("ecs sandbox: mirror %q → %q: want a registry host mapped to a non-empty repository prefix (GAUNTLET_SANDBOX_MIRRORS)", host, prefix)
		}
	}
	if cfg.Family == "" {
		cfg.Family = "gauntlet-sandbox"
	}
	return &Driver{api: api, cfg: cfg, defs: map[string]*taskDef{}}, nil
}

// resolveFiles turns the spec's stored-file references into presigned URLs:
// a GET of the task bundle, PUTs of result.json and artifacts.tar.gz that
// expire at spec.Output.Expires. A task directory recorded on some host
// means nothing to a Fargate task.
func (d *Driver) resolveFiles(ctx context.Context, spec *sandbox.Spec) error {
	t := &spec.Task
	switch {
	case t.BundleKey == "" && t.Dir != "":
		return fmt.Errorf("task %s has only a local directory (%s), no stored bundle a Fargate task can fetch: %w", t.Name, t.Dir, sandbox.ErrNoTaskFiles)
	case t.BundleKey == "":
		return fmt.Errorf("task %s: %w recorded", t.Name, sandbox.ErrNoTaskFiles)
	case d.cfg.Files == nil:
		return errors.New("no presigning blob store is configured for task files (GAUNTLET_BUCKET)")
	}
	url, err := d.cfg.Files.PresignGet(ctx, t.BundleKey, sandbox.BundleURLTTL)
	if err != nil {
		return fmt.Errorf("task %s: presign bundle: %w", t.Name, err)
	}
	t.BundleURL, t.Dir, t.BundleFile = url, "", ""
	ttl := time.Until(spec.Output.Expires)
	if spec.Output.Expires.IsZero() || ttl > maxOutputURLTTL {
		ttl = maxOutputURLTTL
	}
	if ttl <= 0 {
		return fmt.Errorf("output upload window of %s closed at %s", spec.SlotID, spec.Output.Expires)
	}
	out := &spec.Output
	if out.ResultURL, err = d.cfg.Files.PresignPut(ctx, out.Prefix+"result.json", ttl); err != nil {
		return fmt.Errorf("presign result upload: %w", err)
	}
	if out.ArtifactsURL, err = d.cfg.Files.PresignPut(ctx, out.Prefix+"artifacts.tar.gz", ttl); err != nil {
		return fmt.Errorf("presign artifacts upload: %w", err)
	}
	return nil
}

// maxOutputURLTTL bounds the upload URLs of a spec that names no expiry.
const maxOutputURLTTL = 24 * time.Hour

// Launch runs one Fargate task. The launch id is RunTask's clientToken, so a
// retried Launch is answered with the task the first call started.
func (d *Driver) Launch(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	if spec.LaunchID == "" || spec.RunID == "" || spec.SlotID == "" {
		return sandbox.Handle{}, errors.New("ecs launch: spec needs launch id, run id and slot id")
	}
	if (len(spec.Secrets) > 0 || len(spec.VerifierSecrets) > 0 || spec.JudgeKey != "") && (d.cfg.Sealed == nil || d.cfg.DataKeys == nil) {
		return sandbox.Handle{}, fmt.Errorf("ecs launch %s: the launch carries secrets but no sealed-secrets store or data-key source (GAUNTLET_SANDBOX_KMS_KEY) is configured", spec.LaunchID)
	}
	if err := d.resolveFiles(ctx, &spec); err != nil {
		return sandbox.Handle{}, fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
	}
	def, err := d.taskDefinition(ctx, spec)
	if err != nil {
		return sandbox.Handle{}, err
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return sandbox.Handle{}, fmt.Errorf("ecs launch %s: encode spec: %w", spec.LaunchID, err)
	}
	env := []types.KeyValuePair{{Name: aws.String(sandbox.SpecEnv), Value: aws.String(string(specJSON))}}
	sealedEnv, err := d.sealSecrets(ctx, spec)
	if err != nil {
		return sandbox.Handle{}, err
	}
	env = append(env, sealedEnv...)
	out, err := d.api.RunTask(ctx, &ecs.RunTaskInput{
		Cluster:        &d.cfg.Cluster,
		TaskDefinition: &def,
		LaunchType:     types.LaunchTypeFargate,
		Count:          aws.Int32(1),
		ClientToken:    aws.String(clientToken(spec.LaunchID)),
		StartedBy:      aws.String(startedBy(spec.RunID)),
		NetworkConfiguration: &types.NetworkConfiguration{AwsvpcConfiguration: &types.AwsVpcConfiguration{
			Subnets: d.cfg.Subnets, SecurityGroups: d.cfg.SecurityGroups, AssignPublicIp: types.AssignPublicIpDisabled,
		}},
		Overrides: &types.TaskOverride{ContainerOverrides: []types.ContainerOverride{{
			Name:        aws.String(TaskContainer),
			Environment: env,
		}}},
		Tags: []types.Tag{
			{Key: aws.String("gauntlet:launch"), Value: aws.String(spec.LaunchID)},
			{Key: aws.String("gauntlet:run"), Value: aws.String(spec.RunID)},
			{Key: aws.String("gauntlet:slot"), Value: aws.String(spec.SlotID)},
			{Key: aws.String("gauntlet:workspace"), Value: aws.String(spec.Workspace)},
		},
		PropagateTags:        types.PropagateTagsTaskDefinition,
		EnableECSManagedTags: true,
	})
	if err != nil {
		return sandbox.Handle{}, fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
	}
	if len(out.Tasks) == 0 {
		reason := "no task and no failure reported"
		if len(out.Failures) > 0 {
			reason = aws.ToString(out.Failures[0].Reason) + " " + aws.ToString(out.Failures[0].Detail)
		}
		return sandbox.Handle{}, fmt.Errorf("ecs launch %s: %s", spec.LaunchID, reason)
	}
	t := out.Tasks[0]
	return sandbox.Handle{ID: aws.ToString(t.TaskArn), LaunchID: spec.LaunchID, RunID: spec.RunID, SlotID: spec.SlotID, StartedAt: aws.ToTime(t.CreatedAt)}, nil
}

// sealSecrets stores the launch's secret values sealed under a new KMS data
// key and returns the two variables that let the runner open them: the
// object's presigned URL and the wrapped data key. No value and no plaintext
// key reaches ECS.
func (d *Driver) sealSecrets(ctx context.Context, spec sandbox.Spec) ([]types.KeyValuePair, error) {
	if len(spec.Secrets) == 0 && len(spec.VerifierSecrets) == 0 && spec.JudgeKey == "" {
		return nil, nil
	}
	plain := sealed.Secrets{Agent: map[string]string{}, Verifier: map[string]string{}, Judge: spec.JudgeKey.Reveal()}
	for name, v := range spec.Secrets {
		plain.Agent[name] = v.Reveal()
	}
	for name, v := range spec.VerifierSecrets {
		plain.Verifier[name] = v.Reveal()
	}
	key, wrapped, err := d.cfg.DataKeys.NewDataKey(ctx, spec.LaunchID)
	if err != nil {
		return nil, fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
	}
	ct, err := sealed.Seal(plain, key, spec.LaunchID)
	sealed.Wipe(key)
	if err != nil {
		return nil, fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
	}
	// One object per attempt: a retried Launch that ECS answers with the task
	// of the first attempt (same clientToken) must not overwrite the object
	// that task's data key opens.
	fp := sha256.Sum256(wrapped)
	blobKey := blob.LaunchesPrefix + clientToken(spec.LaunchID) + "/" + hex.EncodeToString(fp[:8]) + ".sealed"
	if err := d.cfg.Sealed.Put(ctx, blobKey, bytes.NewReader(ct)); err != nil {
		return nil, fmt.Errorf("ecs launch %s: store sealed secrets: %w", spec.LaunchID, err)
	}
	ttl := d.cfg.SealedTTL
	if ttl <= 0 {
		ttl = 30 * time.Minute
	}
	url, err := d.cfg.Sealed.PresignGet(ctx, blobKey, ttl)
	if err != nil {
		return nil, fmt.Errorf("ecs launch %s: presign sealed secrets: %w", spec.LaunchID, err)
	}
	return []types.KeyValuePair{
		{Name: aws.String(sealed.URLEnv), Value: aws.String(url)},
		{Name: aws.String(sealed.DataKeyEnv), Value: aws.String(base64.StdEncoding.EncodeToString(wrapped))},
	}, nil
}

// clientToken fits a launch id into RunTask's 64-character token.
func clientToken(launchID string) string {
	if len(launchID) <= 64 {
		return launchID
	}
	sum := sha256.Sum256([]byte(launchID))
	return hex.EncodeToString(sum[:])[:64]
}

// startedBy tags a task with its run so List can find a run's tasks
// (ECS allows 36 characters).
func startedBy(runID string) string {
	if len(runID) <= 36 {
		return runID
	}
	sum := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(sum[:])[:36]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Stop stops the task; stopping a stopped or unknown task is not an error.
func (d *Driver) Stop(ctx context.Context, id string) error {
	_, err := d.api.StopTask(ctx, &ecs.StopTaskInput{Cluster: &d.cfg.Cluster, Task: &id, Reason: aws.String("stopped by gauntlet")})
	var invalid *types.InvalidParameterException
	if err != nil && !errors.As(err, &invalid) {
		return fmt.Errorf("ecs stop %s: %w", id, err)
	}
	return nil
}

// List returns the run's tasks that have not stopped.
func (d *Driver) List(ctx context.Context, runID string) ([]sandbox.Handle, error) {
	tasks, err := d.describeRun(ctx, runID, types.DesiredStatusRunning)
	if err != nil {
		return nil, err
	}
	var handles []sandbox.Handle
	for _, t := range tasks {
		if aws.ToString(t.LastStatus) == "STOPPED" {
			continue
		}
		h := sandbox.Handle{ID: aws.ToString(t.TaskArn), RunID: runID, StartedAt: aws.ToTime(t.CreatedAt)}
		for _, tag := range t.Tags {
			switch aws.ToString(tag.Key) {
			case "gauntlet:launch":
				h.LaunchID = aws.ToString(tag.Value)
			case "gauntlet:slot":
				h.SlotID = aws.ToString(tag.Value)
			}
		}
		handles = append(handles, h)
	}
	return handles, nil
}

// Ended returns the completions of the run's stopped tasks that ECS still
// describes (about an hour after they stop), mapped as their state-change
// events are.
func (d *Driver) Ended(ctx context.Context, runID string) ([]sandbox.Completion, error) {
	tasks, err := d.describeRun(ctx, runID, types.DesiredStatusStopped)
	if err != nil {
		return nil, err
	}
	var out []sandbox.Completion
	for _, t := range tasks {
		c, err := completionOf(stateOf(t))
		if errors.Is(err, ErrNotSandbox) {
			continue // still stopping, or not a sandbox
		}
		if err != nil {
			return nil, fmt.Errorf("ecs ended tasks of run %s: %w", runID, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// describeRun lists and describes (with their tags) the run's tasks whose
// desired status is status.
func (d *Driver) describeRun(ctx context.Context, runID string, status types.DesiredStatus) ([]types.Task, error) {
	var arns []string
	var next *string
	for {
		out, err := d.api.ListTasks(ctx, &ecs.ListTasksInput{Cluster: &d.cfg.Cluster, StartedBy: aws.String(startedBy(runID)),
			DesiredStatus: status, NextToken: next})
		if err != nil {
			return nil, fmt.Errorf("ecs list %s tasks of run %s: %w", strings.ToLower(string(status)), runID, err)
		}
		arns = append(arns, out.TaskArns...)
		if next = out.NextToken; next == nil {
			break
		}
	}
	var tasks []types.Task
	for start := 0; start < len(arns); start += 100 {
		out, err := d.api.DescribeTasks(ctx, &ecs.DescribeTasksInput{
			Cluster: &d.cfg.Cluster, Tasks: arns[start:min(start+100, len(arns))], Include: []types.TaskField{types.TaskFieldTags},
		})
		if err != nil {
			return nil, fmt.Errorf("ecs describe tasks of run %s: %w", runID, err)
		}
		tasks = append(tasks, out.Tasks...)
	}
	return tasks, nil
}
