// Package executor holds the sandbox-runner's process as data: what one
// process of an attempt runs (its arguments, environment, user, working
// directory, mounts, network and limits), the Executor that runs it under
// one isolation, and the typed exit it ends with. It is the vocabulary the
// runner's isolations (an image as root or as a non-root user, rootless,
// the host's rootfs, a plain process, the Fargate container) share; the
// contract every one of them keeps is executortest.Run.
//
// It imports nothing of the platform: an isolation is an adapter of this
// port, as buildkit's runc and containerd executors are of theirs.
package executor

import (
	"context"
	"fmt"
	"io"
	"syscall"
)

// Network modes of a process, by the names task.toml uses.
const (
	// NetworkNone gives the process a network namespace with loopback only.
	NetworkNone = "no-network"
	// NetworkPublic gives it the public network (user-mode networking,
	// never the host's namespace or loopback).
	NetworkPublic = "public"
	// NetworkAllowlist lets it reach AllowedHosts only, through an egress
	// proxy on its loopback.
	NetworkAllowlist = "allowlist"
)

// Process is one process to run: the data an isolation needs, and nothing
// of how it isolates it.
type Process struct {
	// Args is the program and its arguments (Args[0] is looked up on the
	// process's PATH inside the sandbox).
	Args []string
	// Env is the complete environment, KEY=VALUE.
	Env []string
	// User runs the process: "" is the isolation's default user (the
	// image's USER; the unprivileged agent uid in the Fargate container),
	// else a Docker USER value (name, uid, name:group, uid:gid) resolved
	// in the sandbox's /etc/passwd and /etc/group.
	User string
	// Cwd is the working directory as the process sees it ("" = the
	// isolation's default: the image's WORKDIR, /app).
	Cwd string
	// Mounts are host paths made visible to the process.
	Mounts []Mount
	// Network is the process's network.
	Network Network
	// Limits bound the process and everything it starts.
	Limits Limits
	// Stdout and Stderr receive its output (nil = discarded).
	Stdout, Stderr io.Writer
}

// Mount is a host path made visible at Target.
type Mount struct {
	Source, Target string
	// ReadOnly refuses every write through the mount.
	ReadOnly bool
	// File: Source is a file, not a directory (its mount point is a file).
	File bool
}

// Network is a process's network mode.
type Network struct {
	// Mode is NetworkNone, NetworkPublic or NetworkAllowlist; "" and any
	// other value are NetworkNone (fail closed).
	Mode string
	// AllowedHosts are what an allowlist process may reach.
	AllowedHosts []string
}

// Limits bound a process and its children (0 = none).
type Limits struct {
	CPUs     float64
	MemoryMB int
	Pids     int
}

// Executor runs a process under one isolation.
type Executor interface {
	// Run starts p, waits for it and tears down everything the start set
	// up: when Run returns, no process of p runs any more. A process that
	// exits 0 returns nil; one that exits otherwise, is killed by a signal
	// or by the memory limit returns an *ExitError; when ctx ends first,
	// the process is killed and Run returns an *ExitError wrapping
	// ctx's error. Any other error means p could not be run at all.
	Run(ctx context.Context, p Process) error
}

// ExitError is how a process that did not succeed ended.
type ExitError struct {
	// Code is its exit status; 128+n when it was killed by signal n (as a
	// shell reports it).
	Code int
	// Signal is the signal that killed it (0 = it exited).
	Signal syscall.Signal
	// OOMKilled: the kernel killed a process of it for its memory limit.
	OOMKilled bool
	// Err is why the runner ended it (ctx's error), if it did.
	Err error
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("exit code %d", e.Code)
	if e.Signal != 0 {
		msg = fmt.Sprintf("killed by signal %d (%s)", int(e.Signal), e.Signal)
	}
	if e.OOMKilled {
		msg += ", out of memory"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns why the runner ended the process, if it did.
func (e *ExitError) Unwrap() error { return e.Err }
