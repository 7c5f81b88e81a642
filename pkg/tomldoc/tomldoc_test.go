package tomldoc

import (
	"errors"
	"testing"
)

func TestDecode(t *testing.T) {
	var v struct {
		Name string `toml:"name"`
	}
	md, err := Decode([]byte("name = \"x\"\nextra = 1\n"), &v)
	if err != nil || v.Name != "x" {
		t.Fatalf("Decode = %+v, %v; want name x", v, err)
	}
	if u := md.Undecoded(); len(u) != 1 || u[0].String() != "extra" {
		t.Errorf("Undecoded = %v, want [extra]", u)
	}
}

func TestDecodeSyntaxError(t *testing.T) {
	var doc map[string]any
	_, err := Decode([]byte("a = 1\nb = = 2\n"), &doc)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Decode of bad TOML = %v, want a *SyntaxError", err)
	}
	if se.Line != 2 || se.Column == 0 || se.Message == "" || se.Error() == "" {
		t.Errorf("SyntaxError = %+v, want line 2 with a column and a message", se)
	}
}
