package dockerfile

import (
	"strings"
	"testing"
)

const multi = `# comment FROM nothing
FROM --platform=linux/amd64 golang:1.26 AS build
RUN echo \
  FROM not-an-instruction
from build AS again
FROM python:3.13-slim-bookworm
COPY --from=build /x /x
COPY --from=0 /y /y
COPY --chown=1:1 --from=ghcr.io/astral-sh/uv:0.9 /uv /uvx /bin/
FROM scratch
`

func TestBases(t *testing.T) {
	got, err := Bases([]byte(multi))
	if err != nil {
		t.Fatal(err)
	}
	want := []From{{Line: 2, Image: "golang:1.26"}, {Line: 6, Image: "python:3.13-slim-bookworm"}, {Line: 9, Image: "ghcr.io/astral-sh/uv:0.9"}}
	if len(got) != len(want) {
		t.Fatalf("Bases = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Bases[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestBasesErrors(t *testing.T) {
	for _, df := range []string{"ARG B=x\nFROM ${B}\n", "FROM\n", "FROM --platform=linux/amd64\n", "FROM a\nARG U=x\nCOPY --from=${U} /a /a\n"} {
		if _, err := Bases([]byte(df)); err == nil {
			t.Errorf("Bases(%q) = nil error, want one", df)
		}
	}
}

func TestPin(t *testing.T) {
	pinned := map[string]string{
		"golang:1.26":               "127.0.0.1:5000/golang@sha256:aa",
		"python:3.13-slim-bookworm": "127.0.0.1:5000/python@sha256:bb",
		"ghcr.io/astral-sh/uv:0.9":  "ghcr.io/astral-sh/uv@sha256:cc",
	}
	out, err := Pin([]byte(multi), pinned)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"FROM --platform=linux/amd64 127.0.0.1:5000/golang@sha256:aa AS build\n",
		"from build AS again\n",
		"FROM 127.0.0.1:5000/python@sha256:bb\n",
		"  FROM not-an-instruction\n",
		"FROM scratch\n",
		"COPY --from=build /x /x\n",
		"COPY --from=0 /y /y\n",
		"COPY --chown=1:1 --from=ghcr.io/astral-sh/uv@sha256:cc /uv /uvx /bin/\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Pin output lacks %q:\n%s", want, s)
		}
	}
	if _, err := Pin([]byte("FROM debian:12\n"), pinned); err == nil || !strings.Contains(err.Error(), "debian:12") {
		t.Errorf("Pin with an unpinned base: err = %v, want one naming it", err)
	}
}
