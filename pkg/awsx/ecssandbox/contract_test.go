package ecssandbox_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox/sandboxtest"
)

// TestContract runs the sandbox port's contract suite on the ECS driver
// against the ECS fake (real SDK client, ECS's JSON protocol) and S3 on
// gofakes3 for the task files. No Fargate task runs here, so the cases that
// need a workload are skipped by the suite; launch adoption, listing and
// stopping run.
func TestContract(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T, env sandboxtest.Env) sandboxtest.Harness {
		fake := cloudtest.NewECS(t)
		client := ecs.New(ecs.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(fake.URL),
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		})
		files := newSealedStore(t)
		d, err := ecssandbox.New(client, ecssandbox.Config{
			Cluster: "arn:aws:ecs:us-east-1:111122223333:cluster/sandboxes", Subnets: []string{"subnet-a"},
			ExecutionRoleARN: "arn:aws:iam::111122223333:role/sandbox-exec", Region: "us-east-1",
			RunnerImage: "111122223333.dkr.ecr.us-east-1.amazonaws.com/runner:1", DefaultImage: "debian@sha256:5f0e8a4c3b2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f",
			Sealed: files, Files: files,
		})
		if err != nil {
			t.Fatal(err)
		}
		return sandboxtest.Harness{Driver: d, Task: sandbox.TaskRef{Name: "task", BundleKey: "tasks/task.tar.gz"}}
	})
}

// TestLaunchNeedsAStoredBundle: a task known only by a host directory
// cannot reach a Fargate task; the launch fails before ECS is called.
func TestLaunchNeedsAStoredBundle(t *testing.T) {
	d, srv, _ := newDriver(t)
	s := testSpec("dir-only")
	s.Task = sandbox.TaskRef{Name: "hello", Dir: "/srv/tasks/hello"}
	if _, err := d.Launch(t.Context(), s); !errors.Is(err, sandbox.ErrNoTaskFiles) {
		t.Fatalf("Launch of a directory-only task = %v, want ErrNoTaskFiles", err)
	}
	if n := len(srv.requests["RunTask"]); n != 0 {
		t.Errorf("RunTask called %d times for an unlaunchable task", n)
	}
}
