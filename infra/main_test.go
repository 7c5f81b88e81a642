package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAppContext(t *testing.T) {
	dir := t.TempDir()
	cdkJSON := filepath.Join(dir, "cdk.json")
	if err := os.WriteFile(cdkJSON, []byte(`{"app":"x","context":{"stage":"dev","natGateways":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		file    string
		args    []string
		want    map[string]any
		wantErr string
	}{
		{name: "cdk.json only", file: cdkJSON, want: map[string]any{"stage": "dev", "natGateways": float64(1)}},
		{name: "-c overrides", file: cdkJSON, args: []string{"-c", "stage=prod", "--context", "jwtIssuer=https://a=b"},
			want: map[string]any{"stage": "prod", "natGateways": float64(1), "jwtIssuer": "https://a=b"}},
		{name: "no cdk.json", file: filepath.Join(dir, "absent.json"), args: []string{"-c", "stage=qa"}, want: map[string]any{"stage": "qa"}},
		{name: "unknown flag", file: cdkJSON, args: []string{"--app"}, wantErr: `unknown argument "--app"`},
		{name: "missing value", file: cdkJSON, args: []string{"-c"}, wantErr: "needs key=value"},
		{name: "no equals", file: cdkJSON, args: []string{"-c", "stage"}, wantErr: "want key=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appContext(tt.file, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("appContext(%v) error = %v, want %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("appContext(%v) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}
