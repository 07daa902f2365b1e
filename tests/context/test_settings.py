"""The [context] section of sediment.toml: presets, per-key origins, errors."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from sediment.config import KEYS, load_config
from sediment.context import ContextSettings, resolve
from sediment.context.settings import KEYS as CONTEXT_KEYS
from sediment.errors import ConfigError


def test_config_knows_every_context_key() -> None:
    assert KEYS["context"] == CONTEXT_KEYS
    assert {f.name for f in fields(ContextSettings)} | {"preset"} == CONTEXT_KEYS


def test_preset_then_keys_with_origins(tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text(
        '[context]\npreset = "aggressive"\nsemantic_weight = 0.5\n'
        'context_types = ["skill", "error"]\n')
    cfg = load_config(tmp_path, env={"SEDIMENT_USER_CONFIG": "none.toml"})
    settings, origin = resolve(cfg.context)
    assert settings.max_items_per_query == 25 and settings.persistence == "global"
    assert settings.summarize_after_iterations == 50
    assert settings.semantic_weight == 0.5
    assert settings.context_types == ("skill", "error")
    assert origin["max_items_per_query"].startswith("preset aggressive")
    assert origin["semantic_weight"].endswith("sediment.toml")
    assert origin["recency_weight"] == "default (standard)"


@pytest.mark.parametrize(("body", "message"), [
    ("bogus = 1", "unknown key"),
    ('preset = "huge"', "context.preset"),
    ("semantic_weight = 1.5", "between 0 and 1"),
    ('context_types = ["note"]', "unknown type"),
    ('persistence = "forever"', "context.persistence"),
    ("max_size_mb = -1", "non-negative"),
    ('skills_across_runs = "no"', "true or false"),
])
def test_bad_values_are_errors(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "sediment.toml").write_text(f"[context]\n{body}\n")
    with pytest.raises(ConfigError, match=message):
        cfg = load_config(tmp_path, env={"SEDIMENT_USER_CONFIG": "none.toml"})
        resolve(cfg.context)


def test_skills_across_runs_is_a_setting(tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text("[context]\nskills_across_runs = false\n")
    cfg = load_config(tmp_path, env={"SEDIMENT_USER_CONFIG": "none.toml"})
    settings, origin = resolve(cfg.context)
    assert settings.skills_across_runs is False
    assert origin["skills_across_runs"].endswith("sediment.toml")
    assert ContextSettings().skills_across_runs is True
