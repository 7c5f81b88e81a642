// Package confine holds what confines a container's processes by default
// under Docker (runc as the Docker engine configures it), as data: the
// default capability set, the masked and read-only paths of /proc and
// /sys, and the default seccomp profile (moby's own, compiled here into the
// classic BPF program the kernel loads). The local sandboxes apply all of
// it, so a root agent changes nothing of the host's kernel that it could
// not change in a Docker container.
package confine
