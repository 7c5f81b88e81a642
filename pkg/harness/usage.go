package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
)

// Usage is an agent's model usage for one trial.
type Usage struct {
	// InputTokens include the cached ones.
	InputTokens int64 `json:"input_tokens"`
	CacheTokens int64 `json:"cache_tokens"`
	// OutputTokens include the reasoning ones.
	OutputTokens    int64   `json:"output_tokens"`
	ReasoningTokens int64   `json:"reasoning_tokens,omitempty"`
	CostUSD         float64 `json:"cost_usd"`
	// CostReported says the agent reported CostUSD (0 may be a price).
	CostReported bool `json:"-"`
}

// UsageFile is the name of the usage report in /logs/agent.
const UsageFile = "usage.json"

// maxUsageBytes bounds how much of an agent-written usage report is read.
const maxUsageBytes = 1 << 20

// ReadUsageJSON is the UsageParser for agents that write
// /logs/agent/usage.json: {"input_tokens", "cache_tokens", "output_tokens",
// "cost_usd"}, every field optional and ≥ 0; other fields are ignored.
func ReadUsageJSON(agentLogDir string) (Usage, bool, error) {
	path := filepath.Join(agentLogDir, UsageFile)
	data, err := ReadAgentFile(path, maxUsageBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Usage{}, false, nil
	}
	if err != nil {
		return Usage{}, false, err
	}
	var u Usage
	var cost struct {
		CostUSD *float64 `json:"cost_usd"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&cost); err == nil {
		u.CostReported = cost.CostUSD != nil
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&u); err != nil {
		return Usage{}, false, fmt.Errorf("%s: want a JSON object with input_tokens, cache_tokens, output_tokens, cost_usd: %w", UsageFile, err)
	}
	if u.InputTokens < 0 || u.CacheTokens < 0 || u.OutputTokens < 0 {
		return Usage{}, false, fmt.Errorf("%s: token counts must be ≥ 0", UsageFile)
	}
	if u.CostUSD < 0 || math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) {
		return Usage{}, false, fmt.Errorf("%s: cost_usd must be a finite number ≥ 0", UsageFile)
	}
	return u, true, nil
}

// ReadAgentFile reads a file that code inside a sandbox wrote, from outside
// it. It refuses to follow a symlink (which could point at any host file the
// runner can read) and anything but a regular file (a FIFO would block), and
// reads at most limit bytes.
func ReadAgentFile(path string, limit int64) ([]byte, error) {
	f, err := openAgentFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), limit)
	}
	return data, nil
}

// openAgentFile opens a file that code inside a sandbox wrote, refusing a
// symlink and anything but a regular file (see ReadAgentFile).
func openAgentFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symlink; refusing to follow it", filepath.Base(path))
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", filepath.Base(path), err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	return f, nil
}
