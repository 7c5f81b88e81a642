package stacks_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
)

// TestFunctionEnvironmentsLoad runs each function's own configuration loader
// (pkg/awsx/cloud, what the Lambda main calls at cold start) on the
// environment the stack gives that function, so a variable a function needs
// and the stack forgets fails here, not at the first invocation in AWS.
func TestFunctionEnvironmentsLoad(t *testing.T) {
	synthesized(t)
	needs := map[string]cloud.Needs{
		"api": cloud.API, "planner": cloud.Planner, "dispatcher": cloud.Dispatcher, "grader": cloud.Grader,
		"ingester": cloud.Ingester, "leaderboard": cloud.Leaderboard, "registrysync": cloud.RegistrySync, "watchdog": cloud.Watchdog,
	}
	fns := infratest.Resources(statelessJSON, "AWS::Lambda::Function")
	for name, need := range needs {
		t.Run(name, func(t *testing.T) {
			var vars map[string]any
			for id, res := range fns {
				if strings.HasPrefix(id, title(name)+"Function") {
					env, _ := infratest.Props(res)["Environment"].(map[string]any)
					vars, _ = env["Variables"].(map[string]any)
				}
			}
			if vars == nil {
				t.Fatalf("no Lambda function %s with an environment in the stateless template", name)
			}
			// Deploy-time tokens (Refs, GetAtt, stack outputs) become sample
			// values of the right shape; literal values are used as they are.
			getenv := func(key string) string {
				v, ok := vars[key]
				if !ok {
					return ""
				}
				if s, ok := v.(string); ok {
					return s
				}
				if m, ok := v.(map[string]any); ok {
					// An Fn::Sub of pseudo parameters only: what it deploys to.
					if sub, ok := m["Fn::Sub"].(string); ok {
						return strings.NewReplacer("${AWS::AccountId}", "111122223333", "${AWS::Region}", "us-east-1",
							"${AWS::URLSuffix}", "amazonaws.com").Replace(sub)
					}
				}
				switch {
				case key == cloud.EnvMaxSandboxes:
					return "50"
				case strings.HasSuffix(key, "_QUEUE_URL"):
					return "https://sqs.us-east-1.amazonaws.com/111122223333/" + strings.ToLower(key)
				}
				return fmt.Sprintf("token-for-%s", key)
			}
			if _, err := cloud.Load(need, getenv); err != nil {
				t.Errorf("%s's environment does not load: %v", name, err)
			}
		})
	}
}
