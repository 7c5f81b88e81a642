"""Record Harbor's verdict on a set of ATIF trajectories.

Development only: run it against Harbor's own source (v0.22.0), fetched
outside this repository, to regenerate pkg/atif/testdata/harbor-verdicts.json:

    python3 scripts/harbor/atif_cases.py /tmp/harbor/src pkg/atif/testdata/harbor-verdicts.json

Each case is a valid trajectory with one change; Harbor's own validator
(utils/trajectory_validator.py, which builds its pydantic Trajectory)
decides whether it is accepted. pkg/atif's ValidateJSON must agree.
"""

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from shapes import stub_missing_modules  # noqa: E402

BASE = {
    "schema_version": "ATIF-v1.7",
    "session_id": "s-1",
    "agent": {"name": "codex", "version": "0.77.0", "model_name": "gpt-5.2"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "Fix the bug.", "timestamp": "2026-01-28T14:00:00Z"},
        {"step_id": 2, "source": "agent", "message": "Running tests.", "timestamp": "2026-01-28T14:00:05Z",
         "model_name": "gpt-5.2",
         "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "make test"}}],
         "observation": {"results": [{"source_call_id": "c1", "content": "ok"}]},
         "metrics": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 800, "cost_usd": 0.01}},
    ],
    "final_metrics": {"total_prompt_tokens": 1000, "total_completion_tokens": 50, "total_cached_tokens": 800,
                      "total_cost_usd": 0.01, "total_steps": 2},
}


def sub(tid, **kw):
    t = {"schema_version": "ATIF-v1.7", "agent": {"name": "helper", "version": "1"},
         "steps": [{"step_id": 1, "source": "user", "message": "summarise"}]}
    if tid is not None:
        t["trajectory_id"] = tid
    t.update(kw)
    return t


def case(name, change):
    doc = copy.deepcopy(BASE)
    change(doc)
    return name, doc


def setp(path, value):
    def f(doc):
        cur = doc
        for k in path[:-1]:
            cur = cur[k]
        cur[path[-1]] = value
    return f


def delp(path):
    def f(doc):
        cur = doc
        for k in path[:-1]:
            cur = cur[k]
        del cur[path[-1]]
    return f


def both(*fs):
    def f(doc):
        for g in fs:
            g(doc)
    return f


CASES = [
    case("valid", lambda d: None),
    case("ATIF-v1.0", setp(["schema_version"], "ATIF-v1.0")),
    case("ATIF-v1.5", setp(["schema_version"], "ATIF-v1.5")),
    case("ATIF-v1.6", setp(["schema_version"], "ATIF-v1.6")),
    case("ATIF-v1.8 (not defined in Harbor 0.22.0)", setp(["schema_version"], "ATIF-v1.8")),
    case("no schema_version (defaults to v1.7)", delp(["schema_version"])),
    case("no session_id", delp(["session_id"])),
    case("timestamp without zone", setp(["steps", 0, "timestamp"], "2026-01-28T14:00:00")),
    case("timestamp without seconds", setp(["steps", 0, "timestamp"], "2026-01-28T14:00")),
    case("timestamp without seconds with zone", setp(["steps", 0, "timestamp"], "2026-01-28T14:00+02:00")),
    case("timestamp with microseconds", setp(["steps", 0, "timestamp"], "2026-01-28T14:00:00.123456")),
    case("timestamp with a space", setp(["steps", 0, "timestamp"], "2026-01-28 14:00:00")),
    case("timestamp date only", setp(["steps", 0, "timestamp"], "2026-01-28")),
    case("timestamp hour only", setp(["steps", 0, "timestamp"], "2026-01-28T14")),
    case("timestamp zone without colon", setp(["steps", 0, "timestamp"], "2026-01-28T14:00:00+0200")),
    case("timestamp not a date", setp(["steps", 0, "timestamp"], "yesterday")),
    case("timestamp month 13", setp(["steps", 0, "timestamp"], "2026-13-01T00:00:00")),
    case("cached tokens above prompt tokens", setp(["steps", 1, "metrics", "cached_tokens"], 5000)),
    case("integer-valued float token count", setp(["steps", 1, "metrics", "prompt_tokens"], 1000.0)),
    case("fractional token count", setp(["steps", 1, "metrics", "prompt_tokens"], 1000.5)),
    case("token count as a string", setp(["steps", 1, "metrics", "prompt_tokens"], "1000")),
    case("token count as a boolean", setp(["steps", 1, "metrics", "prompt_tokens"], True)),
    case("negative token count", setp(["steps", 1, "metrics", "completion_tokens"], -1)),
    case("integer-valued float step_id", setp(["steps", 0, "step_id"], 1.0)),
    case("integer-valued float total_steps", setp(["final_metrics", "total_steps"], 2.0)),
    case("negative total_steps", setp(["final_metrics", "total_steps"], -1)),
    case("cost as an integer", setp(["steps", 1, "metrics", "cost_usd"], 1)),
    case("final metrics without optional totals", setp(["final_metrics"], {"total_steps": 2})),
    case("empty final metrics", setp(["final_metrics"], {})),
    case("totals include summarisation sub-calls", setp(["final_metrics", "total_prompt_tokens"], 4200)),
    case("steps out of order", setp(["steps", 1, "step_id"], 3)),
    case("metrics on a user step", setp(["steps", 0, "metrics"], {"prompt_tokens": 1})),
    case("llm_call_count 0 with metrics", setp(["steps", 1, "llm_call_count"], 0)),
    case("unknown field", setp(["steps", 1, "metrics", "reasoning_tokens"], 3)),
    case("arguments as a string", setp(["steps", 1, "tool_calls", 0, "arguments"], "make test")),
    case("observation for another call", setp(["steps", 1, "observation", "results", 0, "source_call_id"], "c9")),
    case("no steps", setp(["steps"], [])),
    case("subagent trajectories with ids", setp(["subagent_trajectories"], [sub("t-1"), sub("t-2", session_id="s-1")])),
    case("subagent trajectory nested twice", setp(["subagent_trajectories"], [sub("t-1", subagent_trajectories=[sub("t-1-1")])])),
    case("subagent trajectory without trajectory_id", setp(["subagent_trajectories"], [sub(None)])),
    case("subagent trajectory ids repeated", setp(["subagent_trajectories"], [sub("t-1"), sub("t-1")])),
    case("nested subagent without trajectory_id", setp(["subagent_trajectories"], [sub("t-1", subagent_trajectories=[sub(None)])])),
    case("subagent trajectory with a bad step", setp(["subagent_trajectories"], [sub("t-1", steps=[{"step_id": 2, "source": "user", "message": "x"}])])),
    case("subagent ref by trajectory_id", both(
        setp(["subagent_trajectories"], [sub("t-1")]),
        setp(["steps", 1, "observation", "results", 0, "subagent_trajectory_ref"], [{"trajectory_id": "t-1"}]))),
    case("subagent ref by path", setp(["steps", 1, "observation", "results", 0, "subagent_trajectory_ref"], [{"trajectory_path": "sub.json"}])),
    case("subagent ref by session_id only", setp(["steps", 1, "observation", "results", 0, "subagent_trajectory_ref"], [{"session_id": "s-2"}])),
]


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    stub_missing_modules(src)
    from harbor.utils.trajectory_validator import TrajectoryValidator

    verdicts = []
    for name, doc in CASES:
        v = TrajectoryValidator()
        ok = v.validate(doc)
        verdicts.append({"name": name, "harbor_valid": bool(ok), "harbor_errors": v.get_errors(), "trajectory": doc})
    with open(out, "w") as f:
        json.dump(verdicts, f, indent=1)
        f.write("\n")
    for x in verdicts:
        print(("ok  " if x["harbor_valid"] else "BAD ") + x["name"])


if __name__ == "__main__":
    main()
