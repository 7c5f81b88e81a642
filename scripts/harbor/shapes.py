"""Write the JSON Schemas of Harbor's result and config models.

Development only: run it against Harbor's own source (v0.22.0), fetched
outside this repository, to regenerate pkg/harbor/harbortest/shapes/*.json:

    git -C HARBOR_MIRROR archive HEAD src | tar -x -C /tmp/harbor
    python3 scripts/harbor/shapes.py /tmp/harbor/src pkg/harbor/harbortest/shapes

Every object that lists its properties is closed (additionalProperties:
false) so that a misspelt field name fails the check; Harbor's models
ignore unknown keys, so gauntlet's own top-level key of a trial result
("gauntlet") is the one addition allowed.
"""

import json
import sys
import types
import typing

import typing_extensions

# Harbor targets Python 3.12+; these machines have 3.11 and pydantic only.
typing.override = typing_extensions.override
typing.TypedDict = typing_extensions.TypedDict
typing.NotRequired = typing_extensions.NotRequired


def stub_missing_modules(src: str) -> None:
    import random
    import string
    import tomllib
    import uuid

    import pip._vendor.packaging as packaging
    import pip._vendor.packaging.version as packaging_version

    harbor = types.ModuleType("harbor")  # skip harbor/__init__ (version lookup)
    harbor.__path__ = [src + "/harbor"]
    sys.modules["harbor"] = harbor
    toml = types.ModuleType("toml")
    toml.loads = tomllib.loads
    sys.modules.setdefault("toml", toml)
    shortuuid = types.ModuleType("shortuuid")

    class ShortUUID:
        def random(self, length=22):
            return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(length))

    shortuuid.ShortUUID = ShortUUID
    shortuuid.uuid = lambda name=None: str(uuid.uuid5(uuid.NAMESPACE_URL, name or str(uuid.uuid4())))
    sys.modules.setdefault("shortuuid", shortuuid)
    sys.modules.setdefault("packaging", packaging)
    sys.modules.setdefault("packaging.version", packaging_version)


def close(schema, allow=()):
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema:
            schema["additionalProperties"] = False
            for key in allow:
                schema["properties"].setdefault(key, {})
        for v in schema.values():
            close(v)
    elif isinstance(schema, list):
        for v in schema:
            close(v)
    return schema


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    stub_missing_modules(src)
    from harbor.models.job.config import JobConfig
    from harbor.models.job.result import JobResult
    from harbor.models.trial.config import TrialConfig
    from harbor.models.trial.result import TrialResult

    for name, model, allow in [
        ("trial-result", TrialResult, ("gauntlet",)),
        ("trial-config", TrialConfig, ()),
        ("job-config", JobConfig, ()),
        ("job-result", JobResult, ()),
    ]:
        schema = model.model_json_schema(mode="validation")
        close(schema)
        for key in allow:
            schema["properties"][key] = {}
        with open(f"{out}/{name}.schema.json", "w") as f:
            json.dump(schema, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
