package harbor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/gauntlet-bench/gauntlet/pkg/compose"
)

// Paths inside a task directory, relative to its root, as Harbor lays them out.
const (
	TaskConfigFile  = "task.toml"
	InstructionFile = "instruction.md"
	TestScript      = "tests/test.sh"
	SolutionScript  = "solution/solve.sh"
	EnvironmentDir  = "environment"
	TestsDir        = "tests"
)

// ErrTaskIncomplete is wrapped by LoadTask when a required file is missing.
var ErrTaskIncomplete = errors.New("task directory incomplete")

// Task is a loaded Harbor task directory.
type Task struct {
	// Name is [task].name when task.toml has one, else the directory's base name.
	Name        string
	Dir         string
	Config      TaskConfig
	Instruction string
	// HasSolution reports whether solution/solve.sh exists.
	HasSolution bool
	// HasEnvironment reports whether the environment/ directory exists.
	HasEnvironment bool
	// UnsupportedFiles are the task's files Harbor gives a meaning that
	// gauntlet does not implement (see Unsupported).
	UnsupportedFiles []string
	// Steps are a multi-step task's steps, in order (steps.go); nil for a
	// single-step task.
	Steps []Step
	// Compose is environment/docker-compose.yaml, read and checked; nil
	// when the task has none (compose.go).
	Compose *compose.Project
}

// LoadTask reads the task directory dir. task.toml, instruction.md and
// tests/test.sh are required; solution/solve.sh and environment/ are optional.
//
// A multi-step task (a [[steps]] array) keeps its instructions and tests in
// steps/<name>/, so it needs neither at its root: each declared step needs
// steps/<name>/instruction.md and a test script (its own tests/test.sh or
// the task's), and steps/ may hold no directory task.toml does not declare.
func LoadTask(dir string) (Task, error) {
	if err := requireFile(dir, TaskConfigFile); err != nil {
		return Task{}, err
	}
	configPath := filepath.Join(dir, TaskConfigFile)
	data, err := ReadFileLimited(configPath, MaxTaskConfigBytes)
	if err != nil {
		return Task{}, fmt.Errorf("read task config: %w", err)
	}
	cfg, err := ParseTaskConfig(data, configPath)
	if err != nil {
		return Task{}, err
	}
	multiStep := cfg.multiStep()
	var instruction []byte
	if !multiStep {
		for _, rel := range []string{InstructionFile, TestScript} {
			if err := requireFile(dir, rel); err != nil {
				return Task{}, err
			}
		}
		if instruction, err = ReadFileLimited(filepath.Join(dir, InstructionFile), MaxInstructionBytes); err != nil {
			return Task{}, fmt.Errorf("read instruction: %w", err)
		}
	}
	task := Task{
		Name:             filepath.Base(filepath.Clean(dir)),
		Dir:              dir,
		Config:           cfg,
		Instruction:      string(instruction),
		HasSolution:      isRegular(filepath.Join(dir, SolutionScript)),
		HasEnvironment:   isDir(filepath.Join(dir, EnvironmentDir)),
		UnsupportedFiles: unsupportedLayout(dir),
	}
	if cfg.Package != nil && cfg.Package.Name != "" {
		task.Name = cfg.Package.Name
	}
	if task.Steps, err = loadSteps(dir, task.Name, cfg); err != nil {
		return Task{}, err
	}
	if err := task.loadCompose(); err != nil {
		return Task{}, err
	}
	return task, nil
}

func requireFile(dir, rel string) error {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s is missing", ErrTaskIncomplete, path)
	case err != nil:
		return fmt.Errorf("stat %s: %w", path, err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrTaskIncomplete, path)
	}
	return nil
}

func isRegular(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// TaskDigest returns "sha256:<hex>" over the task directory's files: for each
// file, in order of its slash-separated relative path, the git-style mode
// (100644, 100755 for any executable bit, 120000 for a symlink, hashed with its
// target), the path and the length-prefixed contents. Directories themselves,
// ownership, times and other permission bits do not count, and .git is
// skipped, so a fresh clone on any machine gives the same digest.
func TaskDigest(dir string) (string, error) {
	entries, err := digestEntries(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, e := range entries {
		if err := e.writeTo(h, dir); err != nil {
			return "", err
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

type digestEntry struct {
	rel  string // slash-separated
	mode string
}

func digestEntries(dir string) ([]digestEntry, error) {
	var entries []digestEntry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk task dir: %w", err)
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != dir {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return fmt.Errorf("walk task dir: %w", err)
		}
		mode, err := gitMode(d)
		if err != nil {
			return fmt.Errorf("digest %s: %w", path, err)
		}
		entries = append(entries, digestEntry{rel: filepath.ToSlash(rel), mode: mode})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	return entries, nil
}

func gitMode(d fs.DirEntry) (string, error) {
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		return "120000", nil
	case d.Type().IsRegular():
		info, err := d.Info()
		if err != nil {
			return "", err
		}
		if info.Mode().Perm()&0o111 != 0 {
			return "100755", nil
		}
		return "100644", nil
	}
	return "", fmt.Errorf("unsupported file type %v", d.Type())
}

func (e digestEntry) writeTo(h io.Writer, dir string) error {
	path := filepath.Join(dir, filepath.FromSlash(e.rel))
	if e.mode == "120000" {
		target, err := os.Readlink(path)
		if err != nil {
			return fmt.Errorf("digest %s: %w", path, err)
		}
		writeHeader(h, e, int64(len(target)))
		_, err = io.WriteString(h, target)
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("digest %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("digest %s: %w", path, err)
	}
	writeHeader(h, e, info.Size())
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("digest %s: %w", path, err)
	}
	if n != info.Size() {
		return fmt.Errorf("digest %s: file changed while reading", path)
	}
	return nil
}

func writeHeader(h io.Writer, e digestEntry, size int64) {
	// mode SP path NUL size NUL: unambiguous because paths hold no NUL.
	_, _ = io.WriteString(h, e.mode+" "+e.rel+"\x00"+strconv.FormatInt(size, 10)+"\x00")
}
