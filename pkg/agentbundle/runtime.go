package agentbundle

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// A bundle runs whatever its task image is (Debian, Ubuntu, Alpine's musl,
// an image with nothing but /bin/sh) because it reads nothing of the
// image's: every bundle carries a static bash (path/bash, first on the
// agent's PATH: the runner's `bash -c` and the programs' shell tools find
// it where the image has none), and a bundle whose program is dynamically
// linked against glibc (Node, the Bun binaries) carries Debian's loader
// and the libraries the program links under lib/.
//
// The program finds them without reading the image and without an
// environment variable its children would inherit (LD_LIBRARY_PATH would
// make the image's own programs load this glibc with their loader): its
// ELF interpreter is rewritten, in place, to the loader through a file
// descriptor — /proc/self/fd/217/ld.so, fd 217 being the bundle's lib/
// directory, which the harness's command opens before it starts the
// program (harness.OpenRuntime) — and the bundle's copy of the loader has
// its search list (/lib/x86_64-linux-gnu/, /usr/lib/x86_64-linux-gnu/)
// rewritten to that same directory, its /lib/ and /usr/lib/ and its
// ld.so.cache and ld.so.preload to paths that hold nothing. Nothing in the
// bundle names where it is mounted (/installed-agent under bubblewrap, a
// subdirectory of it on Fargate, the cache under process isolation), and
// the program's /proc/self/exe is still the program (Bun reads its
// embedded code there, Node its execPath). Its children inherit fd 217,
// so a program that starts itself again finds its loader too.

// runtimeScheme names how the runtime is laid out and patched; it is part
// of every bundle's digest, so changing the scheme prepares new bundles.
const runtimeScheme = "gauntlet agent runtime v1 fd=" + harness.RuntimeFD

// Parts of the runtime (agents/runtime.json's "part").
const (
	partGlibc = "glibc" // only in bundles whose program links glibc
	partShell = "shell" // in every bundle
)

// Runtime is agents/runtime.json.
type Runtime struct {
	Mirror   string           `json:"mirror"`
	Packages []RuntimePackage `json:"packages"`
}

// RuntimePackage is one pinned Debian package of the runtime.
type RuntimePackage struct {
	Name    string        `json:"name"`
	Version string        `json:"version"`
	Path    string        `json:"path"` // in the mirror's pool
	SHA256  string        `json:"sha256"`
	Files   []RuntimeFile `json:"files"`
}

// RuntimeFile is one file a bundle takes from a package.
type RuntimeFile struct {
	From string `json:"from"` // path in the package (symlinks followed)
	To   string `json:"to"`   // bundle-relative
	Part string `json:"part"` // partGlibc or partShell
}

// ParseRuntime parses agents/runtime.json.
func ParseRuntime(data []byte) (Runtime, error) {
	var rt Runtime
	if err := json.Unmarshal(data, &rt); err != nil {
		return Runtime{}, fmt.Errorf("parse agents/runtime.json: %w", err)
	}
	if rt.Mirror == "" || len(rt.Packages) == 0 {
		return Runtime{}, errors.New("parse agents/runtime.json: want a mirror and packages")
	}
	for _, p := range rt.Packages {
		if len(p.SHA256) != 64 || p.Path == "" {
			return Runtime{}, fmt.Errorf("agents/runtime.json: package %s: want its pool path and sha256", p.Name)
		}
		for _, f := range p.Files {
			if f.Part != partGlibc && f.Part != partShell {
				return Runtime{}, fmt.Errorf("agents/runtime.json: %s %s: part %q is neither %q nor %q", p.Name, f.From, f.Part, partGlibc, partShell)
			}
		}
	}
	return rt, nil
}

// filesFor lists the runtime files a bundle takes: the shell always, the
// glibc part when its program links glibc.
func (rt Runtime) filesFor(b harness.Bundle) []runtimeFileOf {
	var out []runtimeFileOf
	for _, p := range rt.Packages {
		for _, f := range p.Files {
			if f.Part == partShell || (f.Part == partGlibc && b.Glibc) {
				out = append(out, runtimeFileOf{pkg: p, RuntimeFile: f})
			}
		}
	}
	return out
}

type runtimeFileOf struct {
	pkg RuntimePackage
	RuntimeFile
}

// digestInput is what of the runtime a bundle's digest covers.
func (rt Runtime) digestInput(b harness.Bundle) string {
	var sb strings.Builder
	sb.WriteString(runtimeScheme + "\x00")
	for _, f := range rt.filesFor(b) {
		fmt.Fprintf(&sb, "%s\x00%s\x00%s\x00%s\x00", f.pkg.SHA256, f.From, f.To, f.Part)
	}
	return sb.String()
}

// fetchDebs downloads (into dir/.debs, kept for later installs) and checks
// the runtime packages the files need, returning each package's path.
func (rt Runtime) fetchDebs(ctx context.Context, dir string, files []runtimeFileOf, p Progress) (map[string]string, error) {
	debs := filepath.Join(dir, ".debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return nil, fmt.Errorf("runtime packages: %w", err)
	}
	out := map[string]string{}
	for _, f := range files {
		pkg := f.pkg
		if _, ok := out[pkg.Name]; ok {
			continue
		}
		file := filepath.Join(debs, pkg.SHA256+".deb")
		if sumFile(file) == pkg.SHA256 {
			out[pkg.Name] = file
			continue
		}
		if p != nil {
			p.Stage(fmt.Sprintf("runtime %s %s (Debian)", pkg.Name, pkg.Version), -1)
		}
		if err := download(ctx, strings.TrimSuffix(rt.Mirror, "/")+"/"+pkg.Path, file, pkg.SHA256); err != nil {
			return nil, fmt.Errorf("runtime package %s %s: %w (a superseded version leaves the mirror's pool: re-pin agents/runtime.json with scripts/agent-runtime-pin.sh)",
				pkg.Name, pkg.Version, err)
		}
		out[pkg.Name] = file
	}
	return out, nil
}

func sumFile(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// download writes url to file if its content has sha256 want, through a
// temporary file renamed into place.
func download(ctx context.Context, url, file, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".deb-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), resp.Body); err != nil {
		tmp.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("GET %s: sha256 %s, pinned %s", url, got, want)
	}
	return os.Rename(tmp.Name(), file)
}

// debFiles reads the named files (symlinks inside the package followed)
// out of a .deb's data archive (dpkg-deb --fsys-tarfile).
func debFiles(ctx context.Context, deb string, names []string) (map[string][]byte, error) {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb --fsys-tarfile %s (is dpkg installed?): %w: %s", filepath.Base(deb), err, strings.TrimSpace(stderr.String()))
	}
	links := map[string]string{}
	data := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Base(deb), err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			target := hdr.Linkname
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(name), target)
			}
			links[name] = strings.TrimPrefix(path.Clean(target), "/")
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", filepath.Base(deb), err)
			}
			data[name] = b
		}
	}
	got := map[string][]byte{}
	for _, n := range names {
		p := n
		for hops := 0; hops < 10; hops++ {
			t, ok := links[p]
			if !ok {
				break
			}
			p = t
		}
		b, ok := data[p]
		if !ok {
			return nil, fmt.Errorf("%s holds no file %s", filepath.Base(deb), n)
		}
		got[n] = b
	}
	return got, nil
}

// addRuntime writes the runtime files of bundle b into dir (a bundle being
// prepared) and, for a glibc program, patches the bundle's loader and the
// program's interpreter.
func addRuntime(ctx context.Context, rt Runtime, cacheDir, dir string, b harness.Bundle, p Progress) error {
	files := rt.filesFor(b)
	debs, err := rt.fetchDebs(ctx, cacheDir, files, p)
	if err != nil {
		return err
	}
	byPkg := map[string][]string{}
	for _, f := range files {
		byPkg[f.pkg.Name] = append(byPkg[f.pkg.Name], f.From)
	}
	contents := map[string]map[string][]byte{}
	for name, froms := range byPkg {
		if contents[name], err = debFiles(ctx, debs[name], froms); err != nil {
			return err
		}
	}
	for _, f := range files {
		data := contents[f.pkg.Name][f.From]
		if f.To == harness.RuntimeLoader {
			if data, err = patchLoader(data); err != nil {
				return fmt.Errorf("%s's loader: %w", f.pkg.Name, err)
			}
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.To))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			return err
		}
	}
	if b.Glibc {
		if err := setInterpreter(filepath.Join(dir, filepath.FromSlash(b.Program)), harness.RuntimeInterpreter); err != nil {
			return fmt.Errorf("%s: %w", b.Program, err)
		}
	}
	return nil
}

// loaderPaths are the loader's built-in paths and what they become: its
// library directories the bundle's lib/ (through the runtime's fd), the
// rest paths that cannot exist (/dev/null is not a directory). Each
// replacement has the length of what it replaces (the loader keeps their
// lengths beside them), padded with slashes.
var loaderPaths = []struct{ from, to string }{
	{"/usr/lib/x86_64-linux-gnu/", harness.RuntimeDir + "/"},
	{"/lib/x86_64-linux-gnu/", harness.RuntimeDir + "/"},
	// /proc/0 never exists; /dev holds no libraries.
	{"/usr/lib/", "/proc/0/"},
	{"/lib/", "/dev/"},
	{"/etc/ld.so.cache", "/dev/null/cache"},
	{"/etc/ld.so.preload", "/dev/null/preload"},
}

// patchLoader rewrites the loader's built-in paths (each a whole
// NUL-terminated string, not the tail of a longer one).
func patchLoader(data []byte) ([]byte, error) {
	out := append([]byte(nil), data...)
	for _, lp := range loaderPaths {
		to := lp.to
		if len(to) > len(lp.from) {
			return nil, fmt.Errorf("%s is longer than %s", to, lp.from)
		}
		pad := byte('/')
		if !strings.HasSuffix(to, "/") {
			pad = 0
		}
		to += strings.Repeat(string(pad), len(lp.from)-len(to))
		re := regexp.MustCompile(`(^|[^\w/.\-])` + regexp.QuoteMeta(lp.from) + `\x00`)
		n := 0
		for _, m := range re.FindAllIndex(out, -1) {
			start := m[1] - 1 - len(lp.from)
			copy(out[start:], to)
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("it holds no path %s (not a glibc loader?)", lp.from)
		}
	}
	return out, nil
}

// setInterpreter rewrites the ELF program's PT_INTERP in place to interp
// (no longer than the one it has: nothing else in the file moves — Bun
// keeps its code in the file, and a patchelf that grows the dynamic section
// leaves claude crashing in the loader). The file is rewritten through a
// new file, so a hard link into the npm install is left alone.
func setInterpreter(program, interp string) error {
	data, err := os.ReadFile(program)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF program: %w", err)
	}
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		return errors.New("not a 64-bit little-endian ELF program")
	}
	done := false
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		if uint64(len(interp))+1 > p.Filesz {
			return fmt.Errorf("interpreter %s does not fit in its %d bytes", interp, p.Filesz)
		}
		seg := data[p.Off : p.Off+p.Filesz]
		copy(seg, make([]byte, len(seg)))
		copy(seg, interp)
		done = true
	}
	if !done {
		return errors.New("has no ELF interpreter (a static program needs no runtime: set no Glibc on its bundle)")
	}
	tmp := program + ".interp"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, program)
}
