package agentbundle

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// ErrUnrunnable reports that a bundle's program cannot run in a sandbox's
// root filesystem (the task image lacks the C library it was linked with).
var ErrUnrunnable = errors.New("agent bundle cannot run in this sandbox")

// libDirs are where the dynamic loader of a Debian-, Ubuntu- or Red Hat-like
// image finds libraries.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
	"/usr/local/lib"}

// CheckRunnable reports whether the ELF program can start in the root
// filesystem root (the directory the sandbox's / is made of): its program
// interpreter exists there, every library it links exists there, and the C
// library defines every GLIBC_x.y symbol version the program needs. A
// static program (codex's musl build) needs nothing. A bundle's glibc
// program, whose interpreter is harness.RuntimeInterpreter, is checked
// against its bundle's own lib/ instead, whatever root is: it reads
// nothing of the image's. The error wraps ErrUnrunnable and names what is
// missing, e.g. "needs glibc ≥ 2.28 …".
func CheckRunnable(program, root string) error {
	f, err := elf.Open(program)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(program), err)
	}
	defer f.Close()
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("read %s's interpreter: %w", filepath.Base(program), err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return nil
	}
	name := filepath.Base(program)
	dirs := libDirs
	if interp == harness.RuntimeInterpreter {
		// The bundle's lib/ is the sandbox's RuntimeDir: check there.
		lib, ok := bundleLib(program)
		if !ok {
			return fmt.Errorf("%w: %s runs on its bundle's loader, but no %s is above it", ErrUnrunnable, name, harness.RuntimeLoader)
		}
		root, dirs, interp = lib, []string{"/"}, "/ld.so"
	}
	if _, err := resolveIn(root, interp); err != nil {
		return fmt.Errorf("%w: %s is dynamically linked against glibc and needs the loader %s, which the sandbox's root filesystem lacks (a musl or distroless image?)",
			ErrUnrunnable, name, interp)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("read %s's libraries: %w", name, err)
	}
	var missing []string
	libc := ""
	for _, lib := range libs {
		if interp == "/ld.so" && strings.HasPrefix(lib, "ld-linux") {
			continue // the bundle's loader is the program's interpreter: it satisfies its own soname
		}
		p, ok := findLib(root, dirs, lib)
		if !ok {
			missing = append(missing, lib)
			continue
		}
		if strings.HasPrefix(lib, "libc.so") {
			libc = p
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s needs %s, which the sandbox's root filesystem lacks", ErrUnrunnable, name, strings.Join(missing, ", "))
	}
	need, err := neededGlibc(f)
	if err != nil || need == "" || libc == "" {
		return err
	}
	have, err := definedGlibc(libc)
	if err != nil {
		return fmt.Errorf("read the sandbox's C library: %w", err)
	}
	if versionLess(have, need) {
		return fmt.Errorf("%w: %s needs glibc ≥ %s, the sandbox's root filesystem has glibc %s", ErrUnrunnable, name, need, have)
	}
	return nil
}

// neededGlibc is the highest GLIBC_x.y version f's symbols need.
func neededGlibc(f *elf.File) (string, error) {
	syms, err := f.ImportedSymbols()
	if err != nil {
		return "", fmt.Errorf("read imported symbols: %w", err)
	}
	best := ""
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && isVersion(v) && (best == "" || versionLess(best, v)) {
			best = v
		}
	}
	return best, nil
}

// definedGlibc is the highest GLIBC_x.y version the C library defines.
func definedGlibc(libc string) (string, error) {
	f, err := elf.Open(libc)
	if err != nil {
		return "", err
	}
	defer f.Close()
	vers, err := f.DynamicVersions()
	if err != nil {
		return "", err
	}
	best := ""
	for _, v := range vers {
		if n, ok := strings.CutPrefix(v.Name, "GLIBC_"); ok && isVersion(n) && (best == "" || versionLess(best, n)) {
			best = n
		}
	}
	if best == "" {
		return "", errors.New("it defines no GLIBC_ versions")
	}
	return best, nil
}

func isVersion(v string) bool {
	for _, p := range strings.Split(v, ".") {
		if _, err := strconv.Atoi(p); err != nil {
			return false
		}
	}
	return true
}

// versionLess compares dotted numeric versions.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// bundleLib finds the lib/ of the bundle program is in: the nearest
// directory above it holding harness.RuntimeLoader.
func bundleLib(program string) (string, bool) {
	for dir := filepath.Dir(program); ; dir = filepath.Dir(dir) {
		if info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(harness.RuntimeLoader))); err == nil && info.Mode().IsRegular() {
			return filepath.Join(dir, harness.RuntimeLib), true
		}
		if dir == filepath.Dir(dir) {
			return "", false
		}
	}
}

func findLib(root string, dirs []string, lib string) (string, bool) {
	for _, d := range dirs {
		if p, err := resolveIn(root, path.Join(d, lib)); err == nil {
			return p, true
		}
	}
	return "", false
}

// resolveIn resolves the absolute path p inside root as the sandbox would
// see it: symlinks (absolute or relative) are followed within root, never
// out of it. It returns the host path of an existing regular file.
func resolveIn(root, p string) (string, error) {
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		next := path.Join(cur, part)
		host := filepath.Join(root, next)
		info, err := os.Lstat(host)
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > 40 {
				return "", fmt.Errorf("%s: too many symlinks", p)
			}
			target, err := os.Readlink(host)
			if err != nil {
				return "", err
			}
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			parts = append(strings.Split(strings.TrimPrefix(path.Clean(target), "/"), "/"), parts...)
			cur = "/"
			continue
		}
		cur = next
	}
	host := filepath.Join(root, cur)
	info, err := os.Stat(host)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a file", p)
	}
	return host, nil
}
