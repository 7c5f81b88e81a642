package ecssandbox

import (
	"strings"
	"testing"
)

// A spec with a separate verifier's image is refused on Fargate, naming
// the launch and the task; others pass.
func TestCheckVerifierImage(t *testing.T) {
	if err := checkVerifierImage("l-1", "t", ""); err != nil {
		t.Errorf("shared verifier: %v", err)
	}
	err := checkVerifierImage("l-1", "grader", "r/v@sha256:00")
	if err == nil || !strings.Contains(err.Error(), "ecs launch l-1: task grader:") || !strings.Contains(err.Error(), "separate verifier") && !strings.Contains(err.Error(), "environment of its own") {
		t.Errorf("separate verifier on Fargate: %v", err)
	}
}
