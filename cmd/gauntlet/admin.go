package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// adminGroups are the subcommand groups of `gauntlet admin`: what a
// platform operator uses to provision workspaces, billing and users.
var adminGroups = []group{
	{name: "admin workspace", subs: []subcommand{
		{name: "create", usage: "admin workspace create NAME [--id ID] [--idempotency-key KEY]", summary: "create a workspace (a retry returns the same one)", run: adminWorkspaceCreate},
		{name: "list", usage: "admin workspace list [--limit N] [--cursor C] [--all]", summary: "list workspaces, oldest first", run: adminWorkspaceList},
	}},
	{name: "admin billing", subs: []subcommand{
		{name: "set", usage: "admin billing set WS STATUS [--plan PLAN]", summary: "set billing: active, trialing, past_due or canceled", run: adminBillingSet},
	}},
	{name: "admin user", subs: []subcommand{
		{name: "add", usage: "admin user add WS USER [--email EMAIL]", summary: "add a member (locally: prints a new API token once)", run: adminUserAdd},
	}},
}

func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stderr
		if len(args) > 0 {
			w = stdout
		}
		adminUsage(w)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, g := range adminGroups {
		if g.name == "admin "+args[0] {
			return g.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "gauntlet admin: unknown subcommand %q\n\n", args[0])
	adminUsage(stderr)
	return exitUsage
}

func adminUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: gauntlet admin <workspace|billing|user> <subcommand> [flags]\n\n")
	fmt.Fprintf(w, "Platform operators only: the token must carry the admin group (cloud) or be\nthe first workspace's (gauntlet local).\n\nsubcommands:\n")
	for _, g := range adminGroups {
		for _, s := range g.subs {
			fmt.Fprintf(w, "  %-52s %s\n", s.usage, s.summary)
		}
	}
}

func adminWorkspaceCreate(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "admin workspace create", "admin workspace create NAME [--id ID] [--idempotency-key KEY] [--json]")
	id := cmd.fs.String("id", "", "the workspace id, as users' tokens will carry it (default: derived from the key or the name)")
	key := cmd.fs.String("idempotency-key", "", "derive the workspace id from this key (default: from the name)")
	pos, c, err := cmd.connect(args, 1, "want one workspace name (quote it if it has spaces)")
	if err != nil {
		return err
	}
	ws, err := c.CreateWorkspace(ctx, v1.CreateWorkspaceRequest{Name: pos[0], ID: *id}, *key)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, ws)
	}
	fmt.Fprintf(e.stdout, "workspace %s (%s), created %s\n", ws.ID, ws.Name, when(&ws.CreatedAt))
	fmt.Fprintf(e.stdout, "next: gauntlet admin billing set %s active\n", ws.ID)
	return nil
}

func adminWorkspaceList(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "admin workspace list", "admin workspace list [--limit N] [--cursor C] [--all] [--json]")
	limit := cmd.fs.Int("limit", 50, "workspaces per page (1–500)")
	cursor := cmd.fs.String("cursor", "", "continue after a previous page (its next_cursor)")
	all := cmd.fs.Bool("all", false, "follow every page")
	if _, err := cmd.positional(args, 0, "takes no arguments"); err != nil {
		return err
	}
	if *limit < 1 || *limit > 500 {
		return usageError("--limit %d: want 1 to 500", *limit)
	}
	c, err := cmd.flags.client()
	if err != nil {
		return err
	}
	var out v1.AdminWorkspaceList
	next := *cursor
	for {
		page, err := c.Workspaces(ctx, next, *limit)
		if err != nil {
			return err
		}
		out.Workspaces, out.NextCursor, next = append(out.Workspaces, page.Workspaces...), page.NextCursor, page.NextCursor
		if !*all || next == "" {
			break
		}
	}
	if cmd.flags.json {
		return printJSON(e.stdout, out)
	}
	t := newTable(e.stdout, "ID", "NAME", "CREATED")
	for _, ws := range out.Workspaces {
		t.row(ws.ID, ws.Name, when(&ws.CreatedAt))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if out.NextCursor != "" {
		fmt.Fprintf(e.stderr, "more: gauntlet admin workspace list --cursor %s (or --all)\n", out.NextCursor)
	}
	return nil
}

func adminBillingSet(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "admin billing set", "admin billing set WS active|trialing|past_due|canceled [--plan PLAN] [--json]")
	plan := cmd.fs.String("plan", "", "plan name (default: keep the current plan)")
	pos, err := cmd.positional(args, 2, "want a workspace id and a status (active, trialing, past_due or canceled)")
	if err != nil {
		return err
	}
	switch pos[1] {
	case "active", "trialing", "past_due", "canceled":
	default:
		return usageError("status %q: want active, trialing, past_due or canceled", pos[1])
	}
	c, err := cmd.flags.client()
	if err != nil {
		return err
	}
	b, err := c.SetBilling(ctx, pos[0], pos[1], *plan)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, b)
	}
	fmt.Fprintf(e.stdout, "workspace %s billing %s (plan %s); can submit runs: %s\n", b.Workspace, b.Status, first(b.Plan, "none"), strconv.FormatBool(b.CanSubmit))
	return nil
}

func adminUserAdd(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "admin user add", "admin user add WS USER [--email EMAIL] [--json]")
	email := cmd.fs.String("email", "", "the user's email, shown as their name")
	pos, c, err := cmd.connect(args, 2, "want a workspace id and a user id (the identity provider's sub)")
	if err != nil {
		return err
	}
	u, err := c.AddUser(ctx, pos[0], pos[1], *email)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, u)
	}
	fmt.Fprintf(e.stdout, "user %s (%s) is a member of %s\n", u.User, u.Name, u.Workspace)
	if u.Token != "" {
		fmt.Fprintf(e.stdout, "API token (shown only now): %s\nuse it as GAUNTLET_TOKEN=%s\n", u.Token, u.Token)
		return nil
	}
	fmt.Fprintf(e.stdout, "with Cognito, put the user into the workspace:\n  aws cognito-idp admin-update-user-attributes --user-pool-id <UserPoolId> --username <username> --user-attributes Name=custom:workspace,Value=%s\n", u.Workspace)
	return nil
}
