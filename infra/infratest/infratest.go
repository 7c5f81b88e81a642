// Package infratest holds the fixtures and template helpers shared by the
// tests of the CDK constructs: placeholder Lambda assets, cdk-nag findings and
// lookups in synthesized CloudFormation templates.
package infratest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// PlaceholderAssets creates root/<name>/bootstrap for every name: stand-ins
// for the binaries `make lambdas` builds, so that tests synthesize without them.
func PlaceholderAssets(root string, names []string) error {
	for _, name := range names {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("placeholder asset %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\n# test placeholder\n"), 0o755); err != nil {
			return fmt.Errorf("placeholder asset %s: %w", name, err)
		}
	}
	return nil
}

// AddNag applies the cdk-nag AwsSolutions pack to every construct under
// scope; call it before the first synthesis.
func AddNag(scope awscdk.App) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// NagFindings returns the unsuppressed AwsSolutions errors and warnings of a
// stack, one "id: message" line each, sorted.
//
// cdk-nag errors fail the stack's validation, so reading annotations panics
// when there are any; the panic becomes one more finding (the errors
// themselves are printed by the verbose pack).
func NagFindings(stack awscdk.Stack) (out []string) {
	defer func() {
		if r := recover(); r != nil {
			out = append(out, fmt.Sprintf("annotations: %v", r))
		}
	}()
	a := assertions.Annotations_FromStack(stack)
	pattern := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, found := range []any{a.FindError(jsii.String("*"), pattern), a.FindWarning(jsii.String("*"), pattern)} {
		// Decoded through JSON: the Go binding's message type is deprecated.
		var msgs []struct {
			ID    string `json:"id"`
			Entry struct {
				Data any `json:"data"`
			} `json:"entry"`
		}
		b, err := json.Marshal(found)
		if err == nil {
			err = json.Unmarshal(b, &msgs)
		}
		if err != nil {
			out = append(out, fmt.Sprintf("decode annotations: %v", err))
			continue
		}
		for _, m := range msgs {
			out = append(out, fmt.Sprintf("%s: %v", m.ID, m.Entry.Data))
		}
	}
	sort.Strings(out)
	return out
}

// Resources returns the resources of a template of the given type, by logical id.
func Resources(template map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	resources, _ := template["Resources"].(map[string]any)
	for id, r := range resources {
		res, _ := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

// Props returns a resource's Properties.
func Props(resource map[string]any) map[string]any {
	p, _ := resource["Properties"].(map[string]any)
	return p
}

// Statement is one IAM policy statement, flattened for assertions.
type Statement struct {
	Actions   []string
	Resources []string // JSON of each resource (tokens stay as CloudFormation intrinsics)
	Condition string   // JSON of the condition block, or ""
}

// RoleStatements returns the statements of every AWS::IAM::Policy attached
// to the role whose logical id starts with rolePrefix, plus the role's inline
// policies and managed policy ARNs (as Resources of a "managed" statement).
func RoleStatements(template map[string]any, rolePrefix string) []Statement {
	var out []Statement
	for id, role := range Resources(template, "AWS::IAM::Role") {
		if !strings.HasPrefix(id, rolePrefix) {
			continue
		}
		p := Props(role)
		if arns, ok := p["ManagedPolicyArns"].([]any); ok {
			out = append(out, Statement{Actions: []string{"managed"}, Resources: jsonAll(arns)})
		}
		if inline, ok := p["Policies"].([]any); ok {
			for _, pol := range inline {
				doc, _ := pol.(map[string]any)["PolicyDocument"].(map[string]any)
				out = append(out, statements(doc)...)
			}
		}
		for _, pol := range Resources(template, "AWS::IAM::Policy") {
			pp := Props(pol)
			roles, _ := pp["Roles"].([]any)
			for _, r := range roles {
				if ref, _ := r.(map[string]any)["Ref"].(string); ref == id {
					doc, _ := pp["PolicyDocument"].(map[string]any)
					out = append(out, statements(doc)...)
				}
			}
		}
	}
	return out
}

// Actions returns the sorted, de-duplicated actions of statements.
func Actions(statements []Statement) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range statements {
		for _, a := range s.Actions {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

func statements(doc map[string]any) []Statement {
	var out []Statement
	list, _ := doc["Statement"].([]any)
	for _, raw := range list {
		st, _ := raw.(map[string]any)
		if st["Effect"] != "Allow" {
			continue
		}
		s := Statement{Actions: stringsOf(st["Action"]), Resources: jsonAll(listOf(st["Resource"]))}
		if c, ok := st["Condition"]; ok {
			s.Condition = jsonOf(c)
		}
		out = append(out, s)
	}
	return out
}

func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func stringsOf(v any) []string {
	var out []string
	for _, x := range listOf(v) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func jsonAll(list []any) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		out = append(out, jsonOf(v))
	}
	return out
}

func jsonOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// TB is the part of testing.TB that Recover uses.
type TB interface {
	Errorf(format string, args ...any)
}

// Recover turns the panic of a failed template assertion into a test error,
// so one failing assertion ends its test and not the whole test binary.
// Use it as `defer infratest.Recover(t)`.
func Recover(t TB) {
	if r := recover(); r != nil {
		t.Errorf("%v", r)
	}
}
