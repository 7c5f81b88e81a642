package v1

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// schemaTypes names the Go type of each object schema of openapi.json.
var schemaTypes = map[string]any{
	"AddBenchmark": AddBenchmarkRequest{}, "AddUser": AddUserRequest{}, "AdminBilling": AdminBillingView{},
	"AdminUser": AdminUserView{}, "AdminWorkspace": AdminWorkspaceView{}, "AdminWorkspaceList": AdminWorkspaceList{},
	"Agent": AgentView{}, "Benchmark": BenchmarkView{}, "BenchmarkDetail": BenchmarkDetail{}, "BenchmarkList": BenchmarkList{},
	"BoardRow": BoardRow{}, "Comparison": Comparison{}, "Compare": CompareView{}, "CompareEntrant": CompareEntrant{}, "Difference": Difference{}, "CategoryDifference": CategoryDifference{}, "TaskChange": TaskChange{}, "CreateWorkspace": CreateWorkspaceRequest{}, "CreatedRun": CreatedRun{},
	"Error": Error{}, "ErrorCounts": ErrorCounts{}, "Estimate": Estimate{}, "Variance": Variance{}, "HarnessInfo": HarnessInfo{}, "Health": Health{}, "HarnessList": HarnessList{}, "Leaderboard": LeaderboardView{}, "LogLine": LogLine{}, "LogList": LogList{},
	"Manifest": ManifestView{}, "Metrics": Metrics{}, "Outcomes": Outcomes{}, "PassAtK": PassAtKPoint{},
	"PhaseOutput": PhaseOutput{}, "Problem": Problem{}, "Progress": Progress{}, "Result": ResultView{}, "Step": StepView{},
	"ResultDetail": ResultDetail{}, "ResultList": ResultList{}, "Run": RunView{}, "RunBrief": RunBrief{},
	"RunDetail": RunDetail{}, "Settings": Settings{}, "PowerPlan": PowerPlan{}, "RunList": RunList{}, "Secret": SecretView{}, "SecretList": SecretList{},
	"SecretValue": SecretValue{}, "SetBilling": SetBillingRequest{}, "Source": Source{}, "Tokens": Tokens{}, "JudgeUsage": JudgeUsage{}, "ValidationReport": ValidationReport{},
	"Workspace": WorkspaceView{}, "RegistryCredential": RegistryCredential{}, "TaskEnvironment": TaskEnvironment{}, "ImageProgress": ImageProgress{}, "TaskImage": TaskImage{}, "UnavailableTask": UnavailableTask{}, "EnvCheck": EnvCheckView{}, "EnvCheckTask": EnvCheckTask{},
}

type schema struct {
	Properties map[string]json.RawMessage `json:"properties"`
	AllOf      []schema                   `json:"allOf"`
	Ref        string                     `json:"$ref"`
}

// TestOpenAPIMatchesTypes checks that each object schema of the document
// lists exactly the JSON fields of its Go type, so the document and the
// wire types cannot drift apart.
func TestOpenAPIMatchesTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	schemas := doc.Components.Schemas
	var props func(s schema) []string
	props = func(s schema) []string {
		var out []string
		if s.Ref != "" {
			out = append(out, props(schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")])...)
		}
		for _, part := range s.AllOf {
			out = append(out, props(part)...)
		}
		for k := range s.Properties {
			out = append(out, k)
		}
		return out
	}
	for name, s := range schemas {
		v, ok := schemaTypes[name]
		if !ok {
			if len(s.Properties) > 0 || len(s.AllOf) > 0 {
				t.Errorf("schema %s has no Go type in schemaTypes", name)
			}
			continue
		}
		got := props(s)
		want := jsonFields(reflect.TypeOf(v))
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("schema %s vs %T fields (-Go +document):\n%s", name, v, diff)
		}
	}
	for name := range schemaTypes {
		if _, ok := schemas[name]; !ok {
			t.Errorf("schemaTypes names %s, which openapi.json lacks", name)
		}
	}
}

// jsonFields lists the JSON names encoding/json gives t's fields, with
// embedded structs flattened.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
