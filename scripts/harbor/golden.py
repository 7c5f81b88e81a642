"""Write a golden Harbor job directory with Harbor's own models.

Development only: run it against Harbor's own source (v0.22.0), fetched
outside this repository, to regenerate pkg/harbor/testdata/jobs:

    git -C HARBOR_MIRROR archive HEAD src | tar -x -C /tmp/harbor
    python3 scripts/harbor/golden.py /tmp/harbor/src pkg/harbor/testdata/jobs

The job is what `harbor run` leaves: config.json (JobConfig, defaults
excluded), result.json (JobResult without trial_results, stats from
JobStats.from_trial_results) and one directory per trial with config.json,
result.json, agent/trajectory.json (an ATIF Trajectory), verifier/reward.txt
and artifacts/. Times are naive, as Harbor's job writes them.
"""

import sys
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

sys.path.insert(0, str(Path(__file__).parent))
from shapes import stub_missing_modules  # noqa: E402


def main() -> None:
    src, out = sys.argv[1], Path(sys.argv[2])
    stub_missing_modules(src)
    from harbor.models.agent.context import AgentContext
    from harbor.models.job.config import DatasetConfig, JobConfig
    from harbor.models.job.result import JobResult, JobStats
    from harbor.models.trajectories.agent import Agent
    from harbor.models.trajectories.final_metrics import FinalMetrics
    from harbor.models.trajectories.metrics import Metrics
    from harbor.models.trajectories.step import Step
    from harbor.models.trajectories.trajectory import Trajectory
    from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
    from harbor.models.trial.result import AgentInfo, ExceptionInfo, ModelInfo, TimingInfo, TrialResult
    from harbor.models.verifier.result import VerifierResult
    from harbor.utils.pass_at_k import compute_pass_at_k_by_evals

    job_name = "2026-01-28__14-00-00"
    job_dir = out / job_name
    agent = AgentConfig(name="codex", model_name="openai/gpt-5.2", env={"OPENAI_API_KEY": "${OPENAI_API_KEY}"})
    config = JobConfig(job_name=job_name, n_attempts=2, agents=[agent],
                       datasets=[DatasetConfig(name="terminal-bench", version="2.0", task_names=["lru-cache", "csv-summary"])])
    start = datetime(2026, 1, 28, 14, 0, 0)
    # task, attempt, reward (None: no verifier result), exception, tokens in/cache/out, cost
    plan = [
        ("lru-cache", 1, 1.0, None, (1000, 800, 200), 0.5),
        ("lru-cache", 2, 0.0, None, (1200, 900, 300), 0.625),
        ("csv-summary", 1, 1.0, None, (800, 0, 100), 0.25),
        ("csv-summary", 2, None, "AgentTimeoutError", (500, 100, 50), None),
    ]
    results = []
    for i, (task, attempt, reward, exc, tokens, cost) in enumerate(plan):
        trial_name = f"{task}__a{attempt}Xk3Pq"
        began = start + timedelta(minutes=10 * i)
        ended = began + timedelta(seconds=90 + 30 * i)
        tc = TrialConfig(task=TaskConfig(path=Path(task), git_url="https://github.com/laude-institute/terminal-bench-2.git",
                                         git_commit_id="69671fbaac6d67a7ef0dfec016cc38a64ef7a77c", source="terminal-bench"),
                         trial_name=trial_name, trials_dir=Path("jobs") / job_name, agent=agent,
                         job_id=UUID("0f8e2a43-5b1c-4d7e-9a10-3c2b1a0f9e8d"))
        tr = TrialResult(
            id=UUID(int=i + 1), task_name=task, trial_name=trial_name, trial_uri=f"file:///jobs/{job_name}/{trial_name}",
            task_id=tc.task.get_task_id(), source="terminal-bench", task_checksum=f"{i:064x}", config=tc,
            agent_info=AgentInfo(name="codex", version="0.77.0", model_info=ModelInfo(name="gpt-5.2", provider="openai")),
            agent_result=AgentContext(n_input_tokens=tokens[0], n_cache_tokens=tokens[1], n_output_tokens=tokens[2], cost_usd=cost),
            verifier_result=None if reward is None else VerifierResult(rewards={"reward": reward}),
            exception_info=None if exc is None else ExceptionInfo(exception_type=exc, exception_message="agent timed out after 900.0 seconds",
                                                                  exception_traceback="", occurred_at=ended),
            started_at=began, finished_at=ended,
            agent_execution=TimingInfo(started_at=began + timedelta(seconds=5), finished_at=ended - timedelta(seconds=20)),
            verifier=TimingInfo(started_at=ended - timedelta(seconds=20), finished_at=ended),
        )
        results.append(tr)
        trial_dir = job_dir / trial_name
        for sub in ("agent", "verifier", "artifacts"):
            (trial_dir / sub).mkdir(parents=True, exist_ok=True)
        (trial_dir / "config.json").write_text(tc.model_dump_json(indent=4))
        (trial_dir / "result.json").write_text(tr.model_dump_json(indent=4))
        if reward is not None:
            (trial_dir / "verifier" / "reward.txt").write_text(f"{reward}\n")
        traj = Trajectory(
            session_id=f"session-{i}", agent=Agent(name="codex", version="0.77.0", model_name="gpt-5.2"),
            steps=[
                Step(step_id=1, source="user", message=f"Solve {task}.", timestamp=began.isoformat()),
                Step(step_id=2, source="agent", message="Done.", model_name="gpt-5.2",
                     timestamp=(began + timedelta(seconds=30)).isoformat(),
                     metrics=Metrics(prompt_tokens=tokens[0], completion_tokens=tokens[2], cached_tokens=tokens[1])),
            ],
            final_metrics=FinalMetrics(total_prompt_tokens=tokens[0], total_completion_tokens=tokens[2],
                                       total_cached_tokens=tokens[1], total_steps=2),
        )
        (trial_dir / "agent" / "trajectory.json").write_text(traj.model_dump_json(indent=2, exclude_none=True))

    stats = JobStats.from_trial_results(results, n_total_trials=len(results))
    # Job.run appends the dataset's metrics, Mean by default; harbor.metrics
    # needs Python 3.12 syntax, so Mean's rule (metrics/base.py) is inlined.
    rewards = [r.verifier_result.rewards if r.verifier_result else None for r in results]
    for key in stats.evals:
        stats.evals[key].metrics.append({"mean": sum(0 if r is None else next(iter(r.values()), 0) for r in rewards) / len(rewards)})
    for key, pak in compute_pass_at_k_by_evals(results).items():
        stats.evals[key].pass_at_k = pak
    job = JobResult(id=UUID("0f8e2a43-5b1c-4d7e-9a10-3c2b1a0f9e8d"), started_at=start, updated_at=start + timedelta(hours=1),
                    finished_at=start + timedelta(hours=1), n_total_trials=len(results), stats=stats)
    (job_dir / "config.json").write_text(config.model_dump_json(indent=4, exclude_defaults=True))
    (job_dir / "result.json").write_text(job.model_dump_json(indent=4, exclude={"trial_results"}))


if __name__ == "__main__":
    main()
