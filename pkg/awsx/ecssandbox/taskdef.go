package ecssandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// taskDefinition returns the task definition for the spec's pinned image and
// Fargate size, registering it only when no process has yet.
//
// The family is a hash of the whole registration (image digest, size, runner
// and agents images, roles, logs), so a family that exists holds exactly the
// definition wanted: DescribeTaskDefinition answers every later launch, from
// any dispatcher, and RegisterTaskDefinition runs once per environment.
// Dispatchers racing on the very first launch of an environment may each
// register a revision of the same family; each does so at most once (the
// process cache below, filled under the lock), so the duplicates are bounded
// by the number of dispatchers and every later describe returns one of them.
func (d *Driver) taskDefinition(ctx context.Context, spec sandbox.Spec) (string, error) {
	image := spec.Image
	if image == "" {
		image = d.cfg.DefaultImage
	}
	if image == "" {
		return "", fmt.Errorf("ecs launch %s: task %s names no docker_image and no default image is configured (GAUNTLET_SANDBOX_DEFAULT_IMAGE)", spec.LaunchID, spec.Task.Name)
	}
	if !isDigestRef(image) {
		return "", fmt.Errorf("ecs launch %s: task %s: image %q is not pinned to a digest (want repo@sha256:<64 hex>; a sync pins every task image)", spec.LaunchID, spec.Task.Name, image)
	}
	// Every container of the attempt (the task's and each sidecar's) gets
	// the task's cpus and memory_mb; the task's size holds them all.
	perCPUs, perMem := max(spec.CPUs, 0.25), max(spec.MemoryMB, 512)
	n := 1 + len(spec.Sidecars)
	if spec.VerifierImage != "" {
		n++
	}
	cpu, mem, err := fargateSize(perCPUs*float64(n), perMem*n)
	if err != nil {
		if n > 1 {
			what := "the task's"
			if len(spec.Sidecars) > 0 {
				what += fmt.Sprintf(", %d sidecar services'", len(spec.Sidecars))
			}
			if spec.VerifierImage != "" {
				what += ", the separate verifier's"
			}
			err = fmt.Errorf("task %s: %d containers (%s) of %.2f vCPU and %d MiB each: %w", spec.Task.Name, n, what, perCPUs, perMem, err)
		}
		return "", fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
	}
	storage, err := ephemeralStorage(spec.StorageMB)
	if err != nil {
		return "", fmt.Errorf("ecs launch %s: task %s: %w", spec.LaunchID, spec.Task.Name, err)
	}
	shape := containerShape{}
	if n > 1 {
		shape.cpu, shape.mem = int(perCPUs*1024), perMem
		shape.sidecars, shape.mainDeps, err = d.sidecarContainers(spec, d.logs, shape.cpu, shape.mem)
		if err != nil {
			return "", fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
		}
		if spec.VerifierImage != "" {
			v, err := d.verifierContainer(spec, shape.cpu, shape.mem)
			if err != nil {
				return "", fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
			}
			shape.verifier = &v
		}
	}
	in, err := d.registration(PullRef(image, d.cfg.Mirrors), cpu, mem, storage, shape)
	if err != nil {
		return "", fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
	}
	family := aws.ToString(in.Family)

	// One lock per family: launches of other environments, and cache
	// hits, never wait behind this family's describe or register.
	d.mu.Lock()
	def, ok := d.defs[family]
	if !ok {
		def = &taskDef{}
		d.defs[family] = def
	}
	d.mu.Unlock()
	def.mu.Lock()
	defer def.mu.Unlock()
	if def.arn != "" {
		return def.arn, nil
	}
	arn, err := d.describe(ctx, family)
	if err != nil {
		return "", fmt.Errorf("ecs launch %s: %w", spec.LaunchID, err)
	}
	if arn == "" {
		out, err := d.api.RegisterTaskDefinition(ctx, in)
		if err != nil {
			return "", fmt.Errorf("ecs launch %s: register task definition %s for %s: %w", spec.LaunchID, family, image, err)
		}
		arn = aws.ToString(out.TaskDefinition.TaskDefinitionArn)
	}
	def.arn = arn
	return arn, nil
}

// taskDef is one family's ARN, found or registered under its own lock
// (empty until then, and after a failure, so the next launch tries again).
type taskDef struct {
	mu  sync.Mutex
	arn string
}

// describe returns the ARN of the family's latest active revision, or ""
// when the family has none.
func (d *Driver) describe(ctx context.Context, family string) (string, error) {
	out, err := d.api.DescribeTaskDefinition(ctx, &ecs.DescribeTaskDefinitionInput{TaskDefinition: &family})
	var client *types.ClientException
	switch {
	case errors.As(err, &client):
		// ECS answers an unknown family with a ClientException ("Unable to
		// describe task definition"); any other failure is not "absent".
		if strings.Contains(strings.ToLower(client.ErrorMessage()), "unable to describe task definition") {
			return "", nil
		}
		return "", fmt.Errorf("describe task definition %s: %w", family, err)
	case err != nil:
		return "", fmt.Errorf("describe task definition %s: %w", family, err)
	case out.TaskDefinition == nil || out.TaskDefinition.Status != types.TaskDefinitionStatusActive:
		return "", nil
	}
	return aws.ToString(out.TaskDefinition.TaskDefinitionArn), nil
}

// registration builds the RegisterTaskDefinition input of one environment
// (storage: ephemeral GiB, 0 for Fargate's default); its family is the hash
// of everything else in it.
func (d *Driver) registration(image string, cpu, mem, storage int, shape containerShape) (*ecs.RegisterTaskDefinitionInput, error) {
	logs := d.logs
	volumes := []types.Volume{{Name: aws.String("gauntlet")}}
	inits := []types.ContainerDefinition{{
		Name: aws.String(RunnerContainer), Image: aws.String(d.cfg.RunnerImage), Essential: aws.Bool(false),
		// The runner and, in bin/ beside it, the platform's static
		// helpers (terminus-2), which the task's runner serves at
		// /opt/gauntlet/bin.
		Command:          []string{"install", "--static-bin", runnerImageStaticBin, runnerMount + "/sandbox-runner"},
		MountPoints:      []types.MountPoint{{SourceVolume: aws.String("gauntlet"), ContainerPath: aws.String(runnerMount)}},
		LogConfiguration: logs("runner-init"),
	}}
	mounts := []types.MountPoint{{SourceVolume: aws.String("gauntlet"), ContainerPath: aws.String(runnerMount), ReadOnly: aws.Bool(true)}}
	deps := []types.ContainerDependency{{ContainerName: aws.String(RunnerContainer), Condition: types.ContainerConditionSuccess}}
	deps = append(deps, shape.mainDeps...)
	command := []string{"--isolation", "container", "--work", "/gauntlet-work", "--out", "/gauntlet-out",
		"--static-bin-dir", runnerMount + "/bin"}
	if d.cfg.AgentsImage != "" {
		// The agents image (infra/agents/Dockerfile) holds the bundle cache
		// (<harness>-<version>-<digest>/ per bundle) under /agents; its init
		// container copies it into the volume, which the task container
		// mounts read-only and the runner reads as its --agent-bundles.
		volumes = append(volumes, types.Volume{Name: aws.String("agents")})
		inits = append(inits, types.ContainerDefinition{
			Name: aws.String(AgentsContainer), Image: aws.String(d.cfg.AgentsImage), Essential: aws.Bool(false),
			Command:          []string{"cp", "-a", "/agents/.", "/agents-out/"},
			MountPoints:      []types.MountPoint{{SourceVolume: aws.String("agents"), ContainerPath: aws.String("/agents-out")}},
			LogConfiguration: logs("agents-init"),
		})
		mounts = append(mounts, types.MountPoint{SourceVolume: aws.String("agents"), ContainerPath: aws.String(AgentsMount), ReadOnly: aws.Bool(true)})
		deps = append(deps, types.ContainerDependency{ContainerName: aws.String(AgentsContainer), Condition: types.ContainerConditionSuccess})
		command = append(command, "--agent-bundles", AgentsMount)
	}
	task := types.ContainerDefinition{
		Name: aws.String(TaskContainer), Image: aws.String(image), Essential: aws.Bool(true),
		// Root, whatever the image's USER: the runner needs it to run
		// the agent under its own uid and to keep its inputs and
		// outputs out of the agent's reach.
		User:             aws.String("0"),
		EntryPoint:       []string{runnerMount + "/sandbox-runner"},
		Command:          command,
		DependsOn:        deps,
		MountPoints:      mounts,
		LogConfiguration: logs("task"),
	}
	if shape.cpu > 0 {
		task.Cpu, task.Memory = int32(shape.cpu), aws.Int32(int32(shape.mem))
	}
	extra := shape.sidecars
	if shape.verifier != nil {
		volumes = append(volumes, types.Volume{Name: aws.String(handoffVolume)})
		task.MountPoints = append(task.MountPoints, types.MountPoint{SourceVolume: aws.String(handoffVolume), ContainerPath: aws.String(HandoffMount)})
		task.Command = append(task.Command, "--verifier-handoff", HandoffMount)
		extra = append(append([]types.ContainerDefinition(nil), extra...), *shape.verifier)
	}
	if d.cfg.ModelGatewayConfig != "" {
		task.Environment = []types.KeyValuePair{{Name: aws.String(sandbox.GatewayConfigEnv), Value: aws.String(d.cfg.ModelGatewayConfig)}}
	}
	// Sorted, so equal configurations hash to one family.
	for _, name := range slices.Sorted(maps.Keys(d.cfg.ModelGatewaySecrets)) {
		task.Secrets = append(task.Secrets, types.Secret{Name: aws.String(name), ValueFrom: aws.String(d.cfg.ModelGatewaySecrets[name])})
	}
	in := &ecs.RegisterTaskDefinitionInput{
		RequiresCompatibilities: []types.Compatibility{types.CompatibilityFargate},
		NetworkMode:             types.NetworkModeAwsvpc,
		Cpu:                     aws.String(strconv.Itoa(cpu)),
		Memory:                  aws.String(strconv.Itoa(mem)),
		ExecutionRoleArn:        aws.String(d.cfg.ExecutionRoleARN),
		RuntimePlatform:         &types.RuntimePlatform{CpuArchitecture: types.CPUArchitectureX8664, OperatingSystemFamily: types.OSFamilyLinux},
		Volumes:                 volumes,
		ContainerDefinitions:    append(append(inits, task), extra...),
	}
	if storage > 0 {
		in.EphemeralStorage = &types.EphemeralStorage{SizeInGiB: int32(storage)}
	}
	if d.cfg.TaskRoleARN != "" {
		in.TaskRoleArn = aws.String(d.cfg.TaskRoleARN)
	}
	// The SDK's input types marshal deterministically (struct fields in
	// order, map keys sorted), so equal registrations hash equally.
	canon, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode task definition: %w", err)
	}
	sum := sha256.Sum256(canon)
	in.Family = aws.String(d.cfg.Family + "-" + hex.EncodeToString(sum[:])[:20])
	in.Tags = []types.Tag{
		{Key: aws.String("gauntlet:image"), Value: aws.String(truncate(image, 256))},
		{Key: aws.String("gauntlet:size"), Value: aws.String(fmt.Sprintf("%d/%d", cpu, mem))},
	}
	return in, nil
}

// containerShape is what a task with sidecar services adds to its task
// definition: the sidecars' containers, the task container's dependencies
// on them, and every container's own cpu units and memory (MiB); zero for
// a task without sidecars, whose one container has the whole task.
type containerShape struct {
	sidecars []types.ContainerDefinition
	mainDeps []types.ContainerDependency
	// verifier is the separate verifier's container (verifier.go); the
	// task container then mounts the hand-over volume and says where.
	verifier *types.ContainerDefinition
	cpu, mem int
}

// logs is the awslogs configuration of a container (its stream prefix).
func (d *Driver) logs(prefix string) *types.LogConfiguration {
	return &types.LogConfiguration{LogDriver: types.LogDriverAwslogs, Options: map[string]string{
		"awslogs-group": d.cfg.LogGroup, "awslogs-region": d.cfg.Region, "awslogs-stream-prefix": prefix,
	}}
}

// isDigestRef reports whether ref names an image by content digest.
func isDigestRef(ref string) bool {
	_, digest, ok := strings.Cut(ref, "@sha256:")
	if !ok || len(digest) != 64 {
		return false
	}
	_, err := hex.DecodeString(digest)
	return err == nil && !strings.ContainsAny(digest, "ABCDEF")
}

// PullRef rewrites a digest reference to the mirror that fronts its
// registry: "python@sha256:…" with docker.io → "<ecr>/docker-hub" becomes
// "<ecr>/docker-hub/library/python@sha256:…" (ECR pull-through caches of
// Docker Hub want the "library/" of official images spelled out). The
// digest is kept, so the mirror serves exactly the pinned content.
func PullRef(ref string, mirrors map[string]string) string {
	if len(mirrors) == 0 {
		return ref
	}
	name, digest, _ := strings.Cut(ref, "@")
	host, path := "docker.io", name
	if first, rest, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		host, path = first, rest
	}
	if host == "index.docker.io" || host == "registry-1.docker.io" {
		host = "docker.io"
	}
	// A pinned "name:tag@digest" keeps only the digest: the tag says
	// nothing the digest does not, and may have moved upstream since.
	if i := strings.LastIndex(path, ":"); i > strings.LastIndex(path, "/") {
		path = path[:i]
	}
	if host == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	prefix, ok := mirrors[host]
	if !ok {
		return ref
	}
	return strings.TrimSuffix(prefix, "/") + "/" + path + "@" + digest
}
