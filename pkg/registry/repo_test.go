package registry

import "testing"

func TestParseRepo(t *testing.T) {
	for _, tc := range []struct {
		source, dir string
		want        Repo
		wantErr     bool
	}{
		{source: "https://github.com/acme/tasks", want: Repo{URL: "https://github.com/acme/tasks", Path: "tasks", Host: "github.com", Org: "acme", Name: "tasks"}},
		{source: "https://github.com/acme/tasks.git@v2", want: Repo{URL: "https://github.com/acme/tasks.git", Ref: "v2", Path: "tasks", Host: "github.com", Org: "acme", Name: "tasks"}},
		{source: "acme/tasks@main", want: Repo{URL: "https://github.com/acme/tasks.git", Ref: "main", Path: "tasks", Host: "github.com", Org: "acme", Name: "tasks"}},
		{source: "gitlab.com/acme/tasks", dir: "bench", want: Repo{URL: "https://gitlab.com/acme/tasks", Path: "bench", Host: "gitlab.com", Org: "acme", Name: "tasks"}},
		{source: "https://github.com/acme/tasks/tree/dev/datasets/x", want: Repo{URL: "https://github.com/acme/tasks", Ref: "dev", Path: "datasets/x", Host: "github.com", Org: "acme", Name: "tasks"}},
		{source: "https://github.com/acme/tasks/tree/dev/x@main", wantErr: true},
		{source: "https://github.com/acme/tasks/tree/dev/x", dir: "y", wantErr: true},
		{source: "", wantErr: true},
		{source: "/srv/repo", wantErr: true},
		{source: "ftp://example.com/a/b", wantErr: true},
		{source: "https://example.com/only", wantErr: true},
		{source: "https://github.com/acme/tasks@-x", wantErr: true},
		{source: "https://github.com/acme/tasks", dir: "../up", wantErr: true},
	} {
		got, err := ParseRepo(tc.source, tc.dir)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ParseRepo(%q, %q) = %+v, %v; want %+v (error %v)", tc.source, tc.dir, got, err, tc.want, tc.wantErr)
		}
	}
}
