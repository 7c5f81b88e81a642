package api_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/infra/api"
	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/pkg/auth/jwtauth"
)

// TestUserPool: without an external issuer the construct's Cognito pool
// carries the workspace attribute in ID tokens, its app client cannot
// write that attribute, the admin group exists under the name the api
// function checks, MFA stays required, and cdk-nag finds nothing new.
func TestUserPool(t *testing.T) {
	defer infratest.Recover(t)
	app := awscdk.NewApp(nil)
	infratest.AddNag(app)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	a, err := api.New(stack, "Api", api.Props{
		Handler: handler(t, stack), CORSOrigin: jsii.String("https://console.example.com"), ThrottleRate: 10, ThrottleBurst: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if a.UserPool == nil || a.Admins == nil {
		t.Fatal("no user pool or admin group without an external issuer")
	}
	if "custom:"+api.WorkspaceAttribute != jwtauth.ClaimWorkspace || api.AdminGroup != jwtauth.DefaultAdminGroup {
		t.Fatalf("pool names custom:%s and group %s; the api function reads %s and %s",
			api.WorkspaceAttribute, api.AdminGroup, jwtauth.ClaimWorkspace, jwtauth.DefaultAdminGroup)
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::Cognito::UserPool"), map[string]any{
		"MfaConfiguration":      "ON",
		"AdminCreateUserConfig": map[string]any{"AllowAdminCreateUserOnly": true},
		"Schema": assertions.Match_ArrayWith(&[]any{map[string]any{
			"Name": "workspace", "AttributeDataType": "String", "Mutable": true,
			"StringAttributeConstraints": map[string]any{"MinLength": "1", "MaxLength": "128"},
		}}),
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Cognito::UserPoolGroup"), map[string]any{
		"GroupName":  "gauntlet-admins",
		"UserPoolId": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^ApiUserPool"))},
	})

	clients := infratest.Resources(*tmpl.ToJSON(), "AWS::Cognito::UserPoolClient")
	if len(clients) != 1 {
		t.Fatalf("%d app clients, want 1", len(clients))
	}
	for _, c := range clients {
		p := infratest.Props(c)
		read, write := strs(p["ReadAttributes"]), strs(p["WriteAttributes"])
		if !slices.Contains(read, "custom:workspace") {
			t.Errorf("ReadAttributes %v lack custom:workspace: ID tokens would not carry it", read)
		}
		if diff := cmp.Diff([]string{"email", "name"}, write); diff != "" {
			t.Errorf("WriteAttributes (-want +got):\n%s", diff)
		}
	}
	for _, f := range infratest.NagFindings(stack) {
		if strings.Contains(f, "/Api/") {
			t.Errorf("unsuppressed cdk-nag finding %s", f)
		}
	}
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
