package harbor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// Reward file names in the verifier output directory (/logs/verifier).
const (
	RewardJSONFile = "reward.json"
	RewardTextFile = "reward.txt"
)

// RewardKey is the reward name Harbor uses for reward.txt and that selects the
// main value of a reward.json with several entries.
const RewardKey = "reward"

// Errors ReadReward wraps; each wrapped error names the file.
var (
	// ErrRewardMissing: neither reward.json nor reward.txt exists.
	ErrRewardMissing = errors.New("reward file missing")
	// ErrRewardEmpty: the reward file exists but holds nothing (or only spaces).
	ErrRewardEmpty = errors.New("reward file empty")
	// ErrRewardMalformed: the reward file's contents are not a valid reward.
	ErrRewardMalformed = errors.New("reward file malformed")
)

// Reward is what the verifier wrote.
type Reward struct {
	// Value is the main reward: reward.txt's number, the single entry of
	// reward.json, its "reward" entry when it has several, else the least
	// of its entries (see MainReward).
	Value float64
	// Values holds every named reward; reward.txt gives {"reward": Value}.
	Values map[string]float64
	// Source is RewardJSONFile or RewardTextFile.
	Source string
}

// ReadReward reads the verifier's reward from verifierDir. reward.json wins
// over reward.txt when both exist. The errors wrap ErrRewardMissing,
// ErrRewardEmpty or ErrRewardMalformed.
func ReadReward(verifierDir string) (Reward, error) {
	jsonPath := filepath.Join(verifierDir, RewardJSONFile)
	data, err := ReadFileLimited(jsonPath, MaxRewardBytes)
	if err == nil {
		return parseRewardJSON(data, jsonPath)
	}
	if errors.Is(err, ErrTooLarge) {
		return Reward{}, fmt.Errorf("%w: %w", ErrRewardMalformed, err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Reward{}, fmt.Errorf("read reward: %w", err)
	}
	textPath := filepath.Join(verifierDir, RewardTextFile)
	data, err = ReadFileLimited(textPath, MaxRewardBytes)
	if err == nil {
		return parseRewardText(data, textPath)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return Reward{}, fmt.Errorf("%w: neither %s nor %s exists", ErrRewardMissing, jsonPath, textPath)
	}
	if errors.Is(err, ErrTooLarge) {
		return Reward{}, fmt.Errorf("%w: %w", ErrRewardMalformed, err)
	}
	return Reward{}, fmt.Errorf("read reward: %w", err)
}

// parseRewardText reads the first line of reward.txt as one float.
func parseRewardText(data []byte, path string) (Reward, error) {
	text := strings.TrimSpace(string(data))
	if text == "" {
		return Reward{}, fmt.Errorf("%w: %s", ErrRewardEmpty, path)
	}
	line, _, _ := strings.Cut(text, "\n")
	line = strings.TrimSpace(line)
	v, err := strconv.ParseFloat(line, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return Reward{}, fmt.Errorf("%w: %s: want one finite number, got %q", ErrRewardMalformed, path, truncate(line, 40))
	}
	return Reward{Value: v, Values: map[string]float64{RewardKey: v}, Source: RewardTextFile}, nil
}

// parseRewardJSON reads reward.json: a flat JSON object of name → number.
func parseRewardJSON(data []byte, path string) (Reward, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Reward{}, fmt.Errorf("%w: %s", ErrRewardEmpty, path)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return Reward{}, fmt.Errorf("%w: %s: want a JSON object of name → number", ErrRewardMalformed, path)
	}
	if len(raw) == 0 {
		return Reward{}, fmt.Errorf("%w: %s: the object has no rewards", ErrRewardMalformed, path)
	}
	values := make(map[string]float64, len(raw))
	for _, name := range sortedKeys(raw) {
		var v float64
		if err := json.Unmarshal(raw[name], &v); err != nil || string(bytes.TrimSpace(raw[name])) == "null" {
			return Reward{}, fmt.Errorf("%w: %s: %q must be a number, got %s", ErrRewardMalformed, path, name, truncate(string(raw[name]), 40))
		}
		values[name] = v
	}
	main, _ := MainReward(values)
	return Reward{Value: main, Values: values, Source: RewardJSONFile}, nil
}

// MainReward is the one number an attempt is judged by: the "reward" entry
// when there is one, the sole entry of a one-entry map, else the least of
// the entries — so an attempt of a task with several reward keys (and no
// "reward") passes only when every key reaches the pass threshold. Harbor
// itself gives such tasks no single score (its metrics aggregate each key
// apart and it reports pass@k only for one 0/1 key); the per-key values are
// kept whole beside this one. false when values is empty.
func MainReward(values map[string]float64) (float64, bool) {
	if v, ok := values[RewardKey]; ok {
		return v, true
	}
	if len(values) == 0 {
		return 0, false
	}
	least := math.Inf(1)
	for _, v := range values {
		least = min(least, v)
	}
	return least, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
