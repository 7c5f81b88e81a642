package harbor

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadReward(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    Reward
		wantErr error
		errFile string // file the error must name
	}{
		{name: "txt one", files: map[string]string{"reward.txt": "1\n"},
			want: Reward{Value: 1, Values: map[string]float64{"reward": 1}, Source: "reward.txt"}},
		{name: "txt partial with spaces", files: map[string]string{"reward.txt": "  0.25  \n"},
			want: Reward{Value: 0.25, Values: map[string]float64{"reward": 0.25}, Source: "reward.txt"}},
		{name: "txt first line only", files: map[string]string{"reward.txt": "0.5\nlog noise\n"},
			want: Reward{Value: 0.5, Values: map[string]float64{"reward": 0.5}, Source: "reward.txt"}},
		{name: "json wins over txt", files: map[string]string{"reward.json": `{"reward": 0.75}`, "reward.txt": "0"},
			want: Reward{Value: 0.75, Values: map[string]float64{"reward": 0.75}, Source: "reward.json"}},
		{name: "json partial credit with reward key", files: map[string]string{"reward.json": `{"reward": 0.6, "tests_passed": 3, "tests_total": 5}`},
			want: Reward{Value: 0.6, Values: map[string]float64{"reward": 0.6, "tests_passed": 3, "tests_total": 5}, Source: "reward.json"}},
		{name: "json single key of another name", files: map[string]string{"reward.json": `{"accuracy": 0.4}`},
			want: Reward{Value: 0.4, Values: map[string]float64{"accuracy": 0.4}, Source: "reward.json"}},
		{name: "missing", files: map[string]string{"other.txt": "1"}, wantErr: ErrRewardMissing, errFile: "reward.txt"},
		{name: "empty txt", files: map[string]string{"reward.txt": ""}, wantErr: ErrRewardEmpty, errFile: "reward.txt"},
		{name: "blank txt", files: map[string]string{"reward.txt": " \n\n"}, wantErr: ErrRewardEmpty, errFile: "reward.txt"},
		{name: "empty json beats good txt", files: map[string]string{"reward.json": "", "reward.txt": "1"}, wantErr: ErrRewardEmpty, errFile: "reward.json"},
		{name: "txt not a number", files: map[string]string{"reward.txt": "passed"}, wantErr: ErrRewardMalformed, errFile: "reward.txt"},
		{name: "txt NaN", files: map[string]string{"reward.txt": "NaN"}, wantErr: ErrRewardMalformed, errFile: "reward.txt"},
		{name: "txt two numbers on a line", files: map[string]string{"reward.txt": "1 0"}, wantErr: ErrRewardMalformed, errFile: "reward.txt"},
		{name: "json invalid", files: map[string]string{"reward.json": "{reward: 1}"}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json array", files: map[string]string{"reward.json": "[1]"}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json bare number", files: map[string]string{"reward.json": "1"}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json null", files: map[string]string{"reward.json": "null"}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json no entries", files: map[string]string{"reward.json": "{}"}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json nested", files: map[string]string{"reward.json": `{"reward": {"value": 1}}`}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json string value", files: map[string]string{"reward.json": `{"reward": "1"}`}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json null value", files: map[string]string{"reward.json": `{"reward": null}`}, wantErr: ErrRewardMalformed, errFile: "reward.json"},
		{name: "json several without reward: the least", files: map[string]string{"reward.json": `{"accuracy": 1.0, "style": 0.5}`}, want: Reward{Value: 0.5, Values: map[string]float64{"accuracy": 1, "style": 0.5}, Source: RewardJSONFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			got, err := ReadReward(dir)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadReward(%v) error = %v, want %v", tt.files, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if !strings.Contains(err.Error(), filepath.Join(dir, tt.errFile)) {
					t.Errorf("ReadReward(%v) error %q does not name %s", tt.files, err, tt.errFile)
				}
				for _, other := range []error{ErrRewardMissing, ErrRewardEmpty, ErrRewardMalformed} {
					if other != tt.wantErr && errors.Is(err, other) {
						t.Errorf("ReadReward(%v) error also matches %v", tt.files, other)
					}
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadReward(%v) mismatch (-want +got):\n%s", tt.files, diff)
			}
		})
	}
}
