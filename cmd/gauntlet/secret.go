package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

var secretGroup = group{name: "secret", subs: []subcommand{
	{name: "set", usage: "secret set NAME [--scope workspace|personal]", summary: "set a secret from stdin or a hidden prompt", run: secretSet},
	{name: "list", usage: "secret list", summary: "list secret records (never values)", run: secretList},
	{name: "delete", usage: "secret delete NAME [--scope workspace|personal]", summary: "delete a secret record", run: secretDelete},
}}

// maxSecretInput bounds a value read from stdin.
const maxSecretInput = v1.MaxSecretValue

func secretSet(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "secret set", "secret set NAME [--scope workspace|personal] < value")
	scope := cmd.fs.String("scope", "workspace", "workspace (shared) or personal (yours only)")
	pos, err := cmd.positional(args, 1, "want one secret name; the value comes from stdin or a prompt, never the command line")
	if err != nil {
		return err
	}
	// Refuse a name the server would refuse before anyone types a key.
	if err := secret.CheckName(pos[0]); err != nil {
		return usageError("%v", err)
	}
	value, err := readSecret(e, pos[0])
	if err != nil {
		return err
	}
	c, err := cmd.flags.client()
	if err != nil {
		return err
	}
	rec, err := c.PutSecret(ctx, pos[0], *scope, value)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, rec)
	}
	fmt.Fprintf(e.stdout, "%s secret %s set\n", rec.Scope, rec.Name)
	return nil
}

// readSecret reads a value with a no-echo prompt on a terminal, else all
// of stdin (one trailing newline dropped).
func readSecret(e env, name string) ([]byte, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(e.stderr, "value of %s (not echoed): ", name)
		v, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return nil, fmt.Errorf("read secret value: %w", err)
		}
		if len(v) == 0 {
			return nil, errors.New("empty value; nothing set")
		}
		return v, nil
	}
	v, err := io.ReadAll(io.LimitReader(e.stdin, maxSecretInput+2))
	if err != nil {
		return nil, fmt.Errorf("read secret value from stdin: %w", err)
	}
	v = bytes.TrimSuffix(v, []byte("\n"))
	v = bytes.TrimSuffix(v, []byte("\r"))
	switch {
	case len(v) == 0:
		return nil, errors.New("empty value on stdin; pipe the value in, e.g. `printf %s \"$KEY\" | gauntlet secret set NAME`")
	case len(v) > maxSecretInput:
		return nil, fmt.Errorf("the value is longer than %d bytes", maxSecretInput)
	}
	return v, nil
}

func secretList(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "secret list", "secret list [--json]")
	_, c, err := cmd.connect(args, 0, "takes no arguments")
	if err != nil {
		return err
	}
	list, err := c.Secrets(ctx)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, v1.SecretList{Secrets: list})
	}
	t := newTable(e.stdout, "NAME", "SCOPE", "SET BY", "SET AT")
	for _, s := range list {
		t.row(s.Name, s.Scope, s.SetBy, when(&s.SetAt))
	}
	return t.flush()
}

func secretDelete(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "secret delete", "secret delete NAME [--scope workspace|personal]")
	scope := cmd.fs.String("scope", "workspace", "workspace or personal")
	pos, c, err := cmd.connect(args, 1, "want one secret name")
	if err != nil {
		return err
	}
	if err := c.DeleteSecret(ctx, pos[0], *scope); err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, map[string]string{"deleted": pos[0], "scope": *scope})
	}
	fmt.Fprintf(e.stdout, "%s secret %s deleted\n", *scope, pos[0])
	return nil
}
