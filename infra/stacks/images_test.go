package stacks_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/infra/infratest"
)

// TestTaskImagesRepository: built task images go to one repository whose
// tags (build keys) never move, scanned on push and KMS-encrypted.
func TestTaskImagesRepository(t *testing.T) {
	synthesized(t)
	repos := infratest.Resources(statelessJSON, "AWS::ECR::Repository")
	var found map[string]any
	for id, r := range repos {
		if strings.Contains(id, "TaskImages") {
			found = r
		}
	}
	if found == nil {
		t.Fatalf("no TaskImages repository among %d ECR repositories", len(repos))
	}
	p := infratest.Props(found)
	if p["ImageTagMutability"] != "IMMUTABLE" {
		t.Errorf("TaskImages ImageTagMutability = %v, want IMMUTABLE (a build key names one image)", p["ImageTagMutability"])
	}
	if scan, _ := p["ImageScanningConfiguration"].(map[string]any); scan["ScanOnPush"] != true {
		t.Errorf("TaskImages ImageScanningConfiguration = %v, want ScanOnPush", p["ImageScanningConfiguration"])
	}
	if enc, _ := p["EncryptionConfiguration"].(map[string]any); enc["EncryptionType"] != "KMS" {
		t.Errorf("TaskImages EncryptionConfiguration = %v, want KMS", p["EncryptionConfiguration"])
	}
	if found["DeletionPolicy"] != "Retain" {
		t.Errorf("TaskImages DeletionPolicy = %v, want Retain: manifest versions pin its digests", found["DeletionPolicy"])
	}
}

// TestPullThroughCacheRules: Docker Hub and GHCR are fronted by ECR
// pull-through caches signed in with secrets under ECR's required prefix,
// and the sandboxes' mirror setting names exactly those prefixes.
func TestPullThroughCacheRules(t *testing.T) {
	synthesized(t)
	rules := infratest.Resources(statelessJSON, "AWS::ECR::PullThroughCacheRule")
	secrets := infratest.Resources(statelessJSON, "AWS::SecretsManager::Secret")
	got := map[string]string{} // upstream URL → prefix
	for _, r := range rules {
		p := infratest.Props(r)
		got[p["UpstreamRegistryUrl"].(string)] = p["EcrRepositoryPrefix"].(string)
		ref, _ := p["CredentialArn"].(map[string]any)["Ref"].(string)
		secret, ok := secrets[ref]
		if !ok {
			t.Errorf("rule %v: credential %v is not a secret of this stack", p["EcrRepositoryPrefix"], p["CredentialArn"])
			continue
		}
		if name := infratest.Props(secret)["Name"]; name != "ecr-pullthroughcache/"+p["EcrRepositoryPrefix"].(string) {
			t.Errorf("rule %v: credential secret is named %v, want it under ecr-pullthroughcache/", p["EcrRepositoryPrefix"], name)
		}
	}
	want := map[string]string{"registry-1.docker.io": "gauntlet-dev-dockerhub", "ghcr.io": "gauntlet-dev-ghcr"}
	if len(got) != len(want) || got["registry-1.docker.io"] != want["registry-1.docker.io"] || got["ghcr.io"] != want["ghcr.io"] {
		t.Fatalf("pull-through rules %v, want %v", got, want)
	}
	_, fn := function(t, "dispatcher")
	mirrors, _ := json.Marshal(fn["Environment"].(map[string]any)["Variables"].(map[string]any)["GAUNTLET_SANDBOX_MIRRORS"])
	for host, prefix := range map[string]string{"docker.io": want["registry-1.docker.io"], "ghcr.io": want["ghcr.io"]} {
		if !strings.Contains(string(mirrors), host+"=${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/"+prefix) {
			t.Errorf("dispatcher GAUNTLET_SANDBOX_MIRRORS = %s, want %s mapped to the %s cache", mirrors, host, prefix)
		}
	}
}

// TestSandboxExecutionRolePullsOnly: the execution role may pull (and, for
// a pull-through cache's first pull, create and import into the rule's
// repositories) but never push or delete an image.
func TestSandboxExecutionRolePullsOnly(t *testing.T) {
	synthesized(t)
	statements := infratest.RoleStatements(statelessJSON, "SandboxExecutionRole")
	var importing []string // resources of the pull-through statements
	for _, s := range statements {
		for _, a := range s.Actions {
			if slices.Contains([]string{"ecr:PutImage", "ecr:InitiateLayerUpload", "ecr:UploadLayerPart", "ecr:CompleteLayerUpload", "ecr:BatchDeleteImage"}, a) {
				t.Errorf("sandbox execution role may %s", a)
			}
		}
		if slices.Contains(s.Actions, "ecr:BatchImportUpstreamImage") {
			importing = append(importing, s.Resources...)
		}
	}
	if len(importing) != 2 {
		t.Fatalf("pull-through statements name %v, want the two rules' repository prefixes", importing)
	}
	for i, prefix := range []string{"gauntlet-dev-dockerhub", "gauntlet-dev-ghcr"} {
		if !strings.Contains(importing[i], ":repository/"+prefix+`/*"`) {
			t.Errorf("pull-through statement names %s, want only repository/%s/*", importing[i], prefix)
		}
	}
}

// TestImageBuildProject: the build job pushes only to the task-images
// repository and reads only build contexts.
func TestImageBuildProject(t *testing.T) {
	synthesized(t)
	if n := len(infratest.Resources(statelessJSON, "AWS::CodeBuild::Project")); n != 1 {
		t.Fatalf("%d CodeBuild projects, want the one image build project", n)
	}
	statements := infratest.RoleStatements(statelessJSON, "SandboxImageBuildsRole")
	pushes, reads := 0, 0
	for _, s := range statements {
		res := strings.Join(s.Resources, " ")
		if slices.Contains(s.Actions, "ecr:PutImage") {
			pushes++
			if len(s.Resources) != 1 || !strings.Contains(res, "SandboxTaskImages") {
				t.Errorf("build role may push to %v, want only the task-images repository", s.Resources)
			}
		}
		if slices.Contains(s.Actions, "s3:GetObject*") || slices.Contains(s.Actions, "s3:GetObject") {
			reads++
			if !strings.Contains(res, "/builds/*") {
				t.Errorf("build role may read %v, want only builds/*", s.Resources)
			}
		}
		for _, a := range s.Actions {
			if strings.HasPrefix(a, "s3:Put") || strings.HasPrefix(a, "s3:Delete") || strings.HasPrefix(a, "ecs:") || a == "iam:PassRole" {
				t.Errorf("build role may %s", a)
			}
		}
	}
	if pushes != 1 || reads != 1 {
		t.Errorf("build role: %d push and %d context-read statements, want one each: %v", pushes, reads, statements)
	}
	// The build's FROM pulls through the pull-through caches: the role may
	// pull (and import on a first pull) under both rules' prefixes.
	var mirrored []string
	for _, s := range statements {
		if slices.Contains(s.Actions, "ecr:BatchImportUpstreamImage") {
			if slices.Contains(s.Actions, "ecr:PutImage") {
				t.Errorf("build role may push into a pull-through prefix: %v", s)
			}
			mirrored = append(mirrored, s.Resources...)
		}
	}
	for _, prefix := range []string{"gauntlet-dev-dockerhub", "gauntlet-dev-ghcr"} {
		if !slices.ContainsFunc(mirrored, func(r string) bool { return strings.Contains(r, ":repository/"+prefix+`/*"`) }) {
			t.Errorf("build role pulls through %v, want repository/%s/*", mirrored, prefix)
		}
	}
}
