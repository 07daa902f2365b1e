"""``sediment agent init``: a starting Lua persona and the config lines that enable it."""

from __future__ import annotations

import os
from pathlib import Path

from sediment.agents.model import NAME_RE
from sediment.errors import ConfigError, ValidationError

__all__ = ["scaffold_script"]

TEMPLATE = '''\
-- Persona "{name}": resolve() runs in a sandbox with only context.search, context.get
-- and context.sources. Edit the description, tools and prompt, then try it with
--   sediment agent test {name} --arg topic=...
local agent = {{}}

agent.description = "Describe what {name} helps with"
agent.tools = {{ "search" }}
agent.arguments = {{
  {{ name = "topic", description = "What the conversation is about", required = false }},
}}

function agent.resolve(args, config, context)
  local topic = args.topic or "this project"
  local hits = context.search({{ query = topic, k = config.search_limit or 5 }})
  local notes = {{}}
  for i, hit in ipairs(hits) do
    notes[#notes + 1] = string.format("%d. [#%d %s] %s", i, hit.id, hit.kind, hit.content)
  end
  return {{
    system = "You help with " .. topic .. ". Use the search tool before answering.\\n\\n"
      .. "Relevant context:\\n" .. table.concat(notes, "\\n"),
    messages = {{
      {{ role = "assistant", content = "I have read " .. #hits .. " notes on " .. topic .. "." }},
    }},
  }}
end

return agent
'''


def scaffold_script(name: str, root: Path, directory: str = "agents") -> tuple[Path, str]:
    """Write ``root/directory/NAME.lua`` (never over an existing file) and return it with
    the table to add to the sediment.toml in ``root``."""
    if not NAME_RE.match(name):
        raise ValidationError(f"persona name {name[:64]!r}: use 1-64 letters, digits, '_' or "
                              "'-', starting with a letter or digit")
    (root / directory).mkdir(parents=True, exist_ok=True)
    relative = Path(directory) / f"{name}.lua"
    path = root / relative
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise ConfigError(f"{path} already exists; choose another name or edit it") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(TEMPLATE.format(name=name))
    return path, f'[agents.script.{name}]\npath = "{relative.as_posix()}"\ntimeout = 30\n'
