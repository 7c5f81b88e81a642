package api

import (
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// The conversions below turn domain and stored values into their wire
// shapes (package v1); each wire type is filled in one place.

func settings(s run.Settings) v1.Settings {
	return v1.Settings{
		AttemptsPerTask: s.AttemptsPerTask, MaxConcurrentAttempts: s.MaxConcurrentAttempts,
		TimeoutMultiplier: s.TimeoutMultiplier, MaxRetries: s.MaxRetries, PassThreshold: s.PassThreshold,
		MaxTokensPerAttempt: s.MaxTokensPerAttempt, MaxCostUSDPerAttempt: s.MaxCostUSDPerAttempt,
		JudgeModel: s.JudgeModel, JudgeAPIKeySecret: s.JudgeAPIKeySecret, Env: s.Env, SecretNames: s.SecretNames,
		VerifierSecretNames: s.VerifierSecretNames, VerifierEnv: s.VerifierEnv, Artifacts: s.Artifacts,
	}
}

func problems(ps []pipeline.Problem) []v1.Problem {
	out := make([]v1.Problem, len(ps))
	for i, p := range ps {
		out[i] = v1.Problem{Code: p.Code, Field: p.Field, Message: p.Message}
	}
	return out
}

func logLines(ls []records.LogLine) []v1.LogLine {
	out := make([]v1.LogLine, len(ls))
	for i, l := range ls {
		out[i] = v1.LogLine{RunID: l.RunID, At: l.At, Level: l.Level, Step: l.Step, Message: l.Message, Slot: l.Slot}
	}
	return out
}
