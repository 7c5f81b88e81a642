package benchmark

import (
	"strings"
	"testing"
)

func TestValidTaskName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"git-multibranch", true},
		{"django__django-11099", true},
		{"vuejs__core.d0b513eb.$emit.e9a11073", true},
		{"a..b", true},
		{"", false},
		{".", false},
		{"..", false},
		{"../../../tmp/x", false},
		{"a/b", true},
		{"terminal-bench/git-multibranch", true},
		{"a/b/c", false},
		{"a/", false},
		{"/a", false},
		{"a/..", false},
		{"org/a..b", false},
		{"../x", false},
		{"a/.hidden", false},
		{".hidden", false},
		{"-flag", false},
		{"a b", false},
		{"a\x00b", false},
		{string(make([]byte, 129)), false},
	} {
		if got := ValidTaskName(tc.name); got != tc.want {
			t.Errorf("ValidTaskName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCheckDatasetName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr bool
	}{
		{"terminal-bench", false},
		{"org/terminal-bench", false},
		{"", true},
		{"../x", true},
		{"a/../b", true},
		{"a//b", true},
		{"a/", true},
		{"/a", true},
	} {
		if err := CheckDatasetName(tc.name); (err != nil) != tc.wantErr {
			t.Errorf("CheckDatasetName(%q) = %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
}

func TestTaskSegment(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"git-multibranch", "git-multibranch"},
		{"terminal-bench/git-multibranch", "terminal-bench~git-multibranch"},
	} {
		got := TaskSegment(tc.name)
		if got != tc.want {
			t.Errorf("TaskSegment(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if strings.Contains(got, "/") || (got != tc.name && ValidTaskName(got)) {
			t.Errorf("TaskSegment(%q) = %q: want one path segment that is no other task's name", tc.name, got)
		}
	}
}
