package runner

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Sidecar services under container isolation (Fargate): ECS runs each
// service as a container of the task on the task's one network, started
// before the task container in depends_on order; the runner only names
// them. The stand-in here: examples/demo-envs/sidecar-orders's api server
// runs as a process on the test's loopback (the task's network), on a free
// port written into a copy of the task, and the container's /etc/hosts is
// a bind-mounted file as a container runtime's is. The oracle reaches the
// api by its service name and passes; nop fails.
func TestContainerIsolationNamesSidecarContainers(t *testing.T) {
	e := newContainerEnv(t)
	dir := filepath.Join(t.TempDir(), "sidecar-orders")
	if out, err := exec.Command("cp", "-r", "../../examples/demo-envs/sidecar-orders", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the example task: %v: %s", err, out)
	}
	n, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(n)
	for _, rel := range []string{"environment/docker-compose.yaml", "environment/api-server/server.py", "tests/test.sh", "solution/solve.sh"} {
		p := filepath.Join(dir, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "8000", port)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		harness string
		reward  float64
	}{{"oracle", 1}, {"nop", 0}} {
		t.Run(c.harness, func(t *testing.T) {
			e.t = t
			startStandInSidecar(t, filepath.Join(dir, "environment/api-server/server.py"), port)
			hosts := filepath.Join(t.TempDir(), "hosts")
			if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n10.0.1.17\tip-10-0-1-17.ec2.internal"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.wrap = []string{"--bind", hosts, "/etc/hosts"}
			r := e.run(dir, c.harness, "")
			if got := rewardOf(t, r.result); got != c.reward {
				t.Errorf("%s reward = %v, want %v\n%s", c.harness, got, c.reward, r.output)
			}
			data, err := os.ReadFile(hosts)
			if err != nil {
				t.Fatal(err)
			}
			if want := "127.0.0.1\tlocalhost\n10.0.1.17\tip-10-0-1-17.ec2.internal\n127.0.0.1\tapi\n"; string(data) != want {
				t.Errorf("the container's /etc/hosts =\n%q\nwant the task's lines kept and the service named:\n%q", data, want)
			}
		})
	}
}

// startStandInSidecar runs the api server as ECS would run its container,
// until the test ends, and waits until it answers.
func startStandInSidecar(t *testing.T, server, port string) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", server)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "ORDERS_LOG=" + filepath.Join(t.TempDir(), "orders.log")}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in api never listened on %s: %v", port, err)
		}
		<-tick.C
	}
}

// TestContainerIsolationWaitsForTheHealthcheck: under container isolation
// (Fargate) the runner runs [environment.healthcheck] in the container
// before the agent, as in the image sandbox: examples/demo-envs/
// ready-server's check starts its server and passes once it answers, so
// the oracle finds it serving; nop fails. The check runs as root (the
// task's, not the agent's) and the server it started in the background
// lives on through the agent and the verifier, as after `docker exec`.
// (Its port is a free one here: the stand-in container shares the test
// machine's network.)
func TestContainerIsolationWaitsForTheHealthcheck(t *testing.T) {
	e := newContainerEnv(t)
	dir := filepath.Join(t.TempDir(), "ready-server")
	if out, err := exec.Command("cp", "-r", "../../examples/demo-envs/ready-server", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the example task: %v: %s", err, out)
	}
	n, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"task.toml", "solution/solve.sh", "tests/test.sh", "instruction.md"} {
		p := filepath.Join(dir, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		body := strings.ReplaceAll(string(data), "8080", strconv.Itoa(n))
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		harness string
		reward  float64
	}{{"oracle", 1}, {"nop", 0}} {
		t.Run(c.harness, func(t *testing.T) {
			e.t = t
			r := e.run(dir, c.harness, "")
			if got := rewardOf(t, r.result); got != c.reward {
				t.Errorf("%s reward = %v, want %v\n%s", c.harness, got, c.reward, r.output)
			}
			if !strings.Contains(r.output, "healthcheck") {
				t.Errorf("the runner's log says nothing of the healthcheck:\n%s", r.output)
			}
		})
	}
}
