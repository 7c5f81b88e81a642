package benchmark_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
)

func TestCheckRegistryCredentials(t *testing.T) {
	type rc = benchmark.RegistryCredential
	tests := []struct {
		name      string
		in        []rc
		want      []rc
		wantField string
		wantIn    string // a word the message must hold
	}{
		{name: "none", in: nil, want: nil},
		{name: "canonical", in: []rc{{"GHCR.io", "GHCR_PULL"}, {"registry-1.docker.io", "HUB"}, {"127.0.0.1:5000", "LOCAL"}, {"[::1]:5000", "V6"}},
			want: []rc{{"ghcr.io", "GHCR_PULL"}, {"docker.io", "HUB"}, {"127.0.0.1:5000", "LOCAL"}, {"[::1]:5000", "V6"}}},
		{name: "scheme", in: []rc{{"https://ghcr.io", "GHCR_PULL"}}, wantField: "registry_credentials[0].registry", wantIn: "scheme"},
		{name: "path", in: []rc{{"ghcr.io", "A"}, {"ghcr.io/org", "B"}}, wantField: "registry_credentials[1].registry", wantIn: "path"},
		{name: "userinfo", in: []rc{{"bob@ghcr.io", "A"}}, wantField: "registry_credentials[0].registry", wantIn: "not a host"},
		{name: "empty registry", in: []rc{{"", "A"}}, wantField: "registry_credentials[0].registry", wantIn: "empty"},
		{name: "bad port", in: []rc{{"ghcr.io:99999", "A"}}, wantField: "registry_credentials[0].registry", wantIn: "port"},
		{name: "bad host", in: []rc{{"ghcr_io", "A"}}, wantField: "registry_credentials[0].registry", wantIn: "host name"},
		{name: "twice", in: []rc{{"ghcr.io", "A"}, {"GHCR.IO", "B"}}, wantField: "registry_credentials[1].registry", wantIn: "registry_credentials[0]"},
		{name: "bad secret", in: []rc{{"ghcr.io", "ghcr-pull"}}, wantField: "registry_credentials[0].secret", wantIn: "^[A-Z][A-Z0-9_]*$"},
		{name: "too many", in: make([]rc, benchmark.MaxRegistryCredentials+1), wantField: "registry_credentials", wantIn: "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := benchmark.CheckRegistryCredentials(tt.in)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("CheckRegistryCredentials(%v) = %v", tt.in, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("CheckRegistryCredentials(%v) (-want +got):\n%s", tt.in, diff)
				}
				return
			}
			var fe *benchmark.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField || !strings.Contains(fe.Message, tt.wantIn) {
				t.Fatalf("CheckRegistryCredentials(%v) = %v, want a FieldError at %s saying %q", tt.in, err, tt.wantField, tt.wantIn)
			}
		})
	}
}

func TestParseRegistryLogin(t *testing.T) {
	tests := []struct {
		value, user, pass string
		wantErr           bool
	}{
		{value: "bob:ghp_abc:def\n", user: "bob", pass: "ghp_abc:def"},
		{value: "ghp_nocolon", wantErr: true},
		{value: ":pw", wantErr: true},
		{value: "bob:", wantErr: true},
		{value: "bob:pw\nsecond", wantErr: true},
	}
	for _, tt := range tests {
		user, pass, err := benchmark.ParseRegistryLogin(tt.value)
		if tt.wantErr {
			if err == nil || strings.Contains(err.Error(), tt.value) || (len(tt.value) > 3 && strings.Contains(err.Error(), tt.value[1:])) {
				t.Errorf("ParseRegistryLogin(%q) = %v, want an error that does not show the value", tt.value, err)
			}
			continue
		}
		if err != nil || user != tt.user || pass != tt.pass {
			t.Errorf("ParseRegistryLogin(%q) = %q, %q, %v; want %q, %q", tt.value, user, pass, err, tt.user, tt.pass)
		}
	}
}
