package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// A runner that is not root runs image sandboxes rootless: it re-executes
// itself as root of a user namespace of its own (and a mount namespace that
// namespace owns), where it may mount the attempt's overlay, and bwrap,
// slirp4netns and the egress proxy work as they do for a root runner. Its
// own uid is root there; the subordinate ids /etc/subuid and /etc/subgid
// give it, when newuidmap and newgidmap are installed, are uids and gids
// 1…N, so an image's non-root USER can run as itself. util-linux's unshare
// sets the namespace up (newuidmap needs a process outside the namespace to
// write the map, which unshare forks) and then execs the runner in place:
// the same pid, so the driver's signals and its process group still reach
// it.

// subordinateRange is a block of ids /etc/subuid or /etc/subgid gives a user.
type subordinateRange struct {
	start, count uint64
}

// maxSubordinateIDs caps how many subordinate ids the namespace maps: an
// image's ids are below 65536 (nobody is 65534).
const maxSubordinateIDs = 65536

// rootlessInvocation is the command line that re-executes self, with args,
// as root of a new user and mount namespace: unshare's, or an error saying
// why a rootless sandbox cannot be had here.
func rootlessInvocation(self string, args []string) (bin string, argv []string, err error) {
	bin, err = exec.LookPath("unshare")
	if err != nil {
		return "", nil, fmt.Errorf("rootless image sandbox: util-linux's unshare is not installed: %w", err)
	}
	if n, err := readInt("/proc/sys/user/max_user_namespaces"); err == nil && n == 0 {
		return "", nil, errors.New("rootless image sandbox: user namespaces are disabled on this host (sysctl user.max_user_namespaces = 0); run the runner as root, or enable them")
	}
	argv = []string{"unshare", "--map-root-user", "--mount", "--propagation", "private"}
	// Without subordinate ids the namespace holds the runner's uid alone
	// (as root); the trial says so and refuses a non-root image user.
	if uids, gids, why := subordinateIDs(os.Geteuid()); why == "" {
		argv = append(argv,
			fmt.Sprintf("--map-users=%d,1,%d", uids.start, uids.count),
			fmt.Sprintf("--map-groups=%d,1,%d", gids.start, gids.count))
	}
	argv = append(argv, "--", self)
	return bin, append(argv, args...), nil
}

// subordinateIDs finds the first subordinate uid and gid ranges of the user
// uid (by name or by number) when newuidmap and newgidmap can map them;
// else why not.
func subordinateIDs(uid int) (uids, gids subordinateRange, why string) {
	for _, bin := range []string{"newuidmap", "newgidmap"} {
		if _, err := exec.LookPath(bin); err != nil {
			return uids, gids, bin + " is not installed (apt-get install uidmap)"
		}
	}
	names := []string{strconv.Itoa(uid)}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		names = append(names, u.Username)
	}
	var ok bool
	if uids, ok = lookupSubordinate("/etc/subuid", names); !ok {
		return uids, gids, "no subordinate uids for this user in /etc/subuid"
	}
	// newgidmap looks the gid ranges up by the user too, not by the group.
	if gids, ok = lookupSubordinate("/etc/subgid", names); !ok {
		return uids, gids, "no subordinate gids for this user in /etc/subgid"
	}
	return uids, gids, ""
}

// lookupSubordinate returns the first range of file (name:start:count
// lines) that belongs to any of names, capped at maxSubordinateIDs.
func lookupSubordinate(file string, names []string) (subordinateRange, bool) {
	f, err := os.Open(file)
	if err != nil {
		return subordinateRange{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(fields) != 3 || !slices.Contains(names, fields[0]) {
			continue
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 {
			continue
		}
		return subordinateRange{start: start, count: min(count, maxSubordinateIDs)}, true
	}
	return subordinateRange{}, false
}

func readInt(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// enterRootless replaces this process with itself as root of a new user
// namespace (see rootlessInvocation). It returns only on failure.
func enterRootless(args, env []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("rootless image sandbox: find the runner binary: %w", err)
	}
	bin, argv, err := rootlessInvocation(self, args)
	if err != nil {
		return err
	}
	if err := syscall.Exec(bin, argv, env); err != nil {
		return fmt.Errorf("rootless image sandbox: exec %s: %w", bin, err)
	}
	return nil
}

// idExtent is one line of a /proc/PID/uid_map or gid_map: count ids from
// inside (in the namespace) map to outside (in its parent).
type idExtent struct{ inside, outside, count uint64 }

// readIDMap reads a map file of this process ("/proc/self/uid_map" or
// "/proc/self/gid_map"); nil when it cannot be read.
func readIDMap(file string) []idExtent {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var m []idExtent
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e idExtent
		if _, err := fmt.Sscan(line, &e.inside, &e.outside, &e.count); err == nil {
			m = append(m, e)
		}
	}
	return m
}

// inUserNamespace reports whether this process runs in a user namespace
// other than the host's: its uid map is not the whole identity map.
// There, the runner is root without the host's privileges (no loop device,
// no cgroup of the host's).
func inUserNamespace() bool {
	m := readIDMap("/proc/self/uid_map")
	return m != nil && !(len(m) == 1 && m[0] == idExtent{0, 0, 1<<32 - 1})
}

// namespaceIDs is how many uids this process's user namespace maps
// besides root (0 = root alone), for the trial's limits.
func namespaceIDs() (extra uint64) {
	for _, e := range readIDMap("/proc/self/uid_map") {
		if e.inside != 0 {
			extra += e.count
		}
	}
	return extra
}

// idMapped reports whether id is inside this process's user namespace, by
// its map file (/proc/self/uid_map or gid_map).
func idMapped(mapFile string, id uint32) bool {
	for _, e := range readIDMap(mapFile) {
		if uint64(id) >= e.inside && uint64(id) < e.inside+e.count {
			return true
		}
	}
	return false
}
