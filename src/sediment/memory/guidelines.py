"""The ``memory_guidelines`` prompt: how an agent should use its memory, in our words."""

from __future__ import annotations

MEMORY_GUIDELINES = """\
# Using Sediment memory

Sediment keeps what you learn about the person you work with and about this project between
sessions. Three tools: recall_memories (look things up), save_memory (record something),
manage_memory (list, update, delete, restore, history, forget everything: forget_all takes
scope project, the default, or user, which reaches your user memories in every project).

## Look before you act: recall_memories
- When a task starts, ask for what bears on it: "how this user likes Python tests written",
  "how this project deploys", "what the user told me about the API client".
- When the person points at the past ("as before", "like last time", "I already said",
  "you keep doing this"), recall before you answer.
- When you are about to pick a style, a tool or a convention and are not sure which one the
  person or the project uses, recall instead of guessing.
Results come best first, each with a short id (u12 for your own memories, p34 for your
memories of this project, g5 for global ones: use it as it is in manage_memory) and a score
from 0 to 1 that means the same in every query. Nothing scoring under the floor (min_score,
0.2 by default) comes back: an empty result means nothing relevant is remembered, so do not
retry with vaguer words; pass min_score 0 only to see the weak matches too. A correction
comes before the fact it corrects; corrections you were given matter most: follow them.

## Record what will matter next time: save_memory
Save as soon as the person tells you:
- a preference: "I'd rather...", "always...", "never...";
- a correction: "no, do it like this", "that is wrong":  category correction, source
  corrected;
- a convention of the team or project: "here we always...";
- a fact about the project or its environment: where it runs, what it depends on;
- an instruction for how you should work: "when you open a PR, ...".
Save what you infer too, with source inferred: a correction the person keeps making, a
style their code always follows, a structure you found in the codebase.
Use source explicit when the person asked you to remember, corrected when they corrected
you, inferred when you worked it out (confidence 1.0, 0.9 and 0.7).
Scope user (the default) follows the person to every project; scope project stays with
this repository. A global save is only a proposal: a human decides.

## Write a memory that stands alone
- One fact per memory; split a list of preferences into several saves.
- Specific and complete: "Uses pytest with plain asserts and fixtures in conftest.py, never
  unittest classes", not "likes simple tests".
- Self-contained: name the language, tool, file or service it is about, so it makes sense
  when recalled months later in another conversation.
- Present tense: "Prefers...", "The project deploys...".
- Saving the same fact again in other words replaces the old memory (status updated,
  with both ids); saving the same text again writes nothing (status exists).
- To correct a memory, say what was wrong: "The user's dog is named Rex, not Max", with
  category correction and source corrected. Sediment replaces the memory it corrects and
  says so (looks_like_correction, and changed: the old words and the new).
- A different fact about the same subject is kept beside the old one ("Deploys to staging
  happen on Tuesdays" and "Deploys to production happen on Thursdays"); the result lists
  close memories it kept in near, with their ids, text and similarity.
- You have the last word. If Sediment kept two memories that are one fact, save again with
  supersedes: the id to replace; if it replaced one you wanted to keep, save with
  keep_separate: true, or manage_memory restore brings the replaced one back
  (manage_memory history shows a memory's versions).

## Categories
- preference: how the person likes things done (style, tools, tone).
- pattern: something that keeps happening in their work or in the code.
- correction: something you got wrong and were told how to do right.
- fact: something true about the project, the team or the environment.
- instruction: a standing order for how you should behave.
- convention: an agreed rule of the team or project (naming, layout, workflow).

## Never save
- Passwords, API keys, tokens, private keys or anything else secret: Sediment refuses
  them, and you should not try.
- The details of the task at hand ("fixing issue 123 today"): they will not matter later.
- What anyone can see in the repository or its docs already, or that is plainly obvious.
- Guesses you have no evidence for.
"""
