"""picompact's settings inside Pi's own settings files: the ``picompact`` key of ``settings.json``.

Global (``<agent dir>/settings.json``) and project (``<cwd>/.pi/settings.json``, only in a trusted project) are
merged the way Pi merges settings (objects key by key, the project winning)::

    {"picompact": {"enabled": true, "mode": "verbatim", "cap": 6000, "lookupModel": "openai/gpt-5-mini"}}

- ``enabled`` (default true): false turns the extension off (Pi compacts its own way; no tools).
- ``mode``: ``verbatim`` or ``summary``; default: the mode given to ``picompact pi install`` (verbatim).
- ``cap``: the verbatim checkpoint's budget in tokens (``compact --cap``); ``null`` or absent: the default
  (keepRecentTokens / 2); ``false``: no cap (``compact --no-cap``).
- ``lookupModel``: ``PROVIDER/ID`` of the model ``context_lookup`` uses (default: the session's model if
  picompact can call it, else ``PICOMPACT_MODEL``).
- ``crossSession``: what ``context_search_sessions`` searches: ``"project"`` (default: the sessions of the
  session's project), ``"all"`` (every session Pi can find), ``false`` (no such tool). A project's ``"all"``
  counts only in a project trusted for certain (told so, or Pi's decision without asking): an undecided
  project's repository cannot widen the search to other projects' sessions.
- ``prune`` (default true): false stops the extension from pruning old tool output between compactions (the
  ``context_edit`` batches it hands Pi when they cost no prompt cache; ``picompact pi prune-drafts``).

A value of the wrong type is reported and ignored (the default applies), never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from pi_compact.pi.settings import LoadedSettings, load_settings

SETTINGS_KEY = "picompact"
MODES = ("verbatim", "summary")
CROSS_SESSION = ("project", "all")


class PicompactConfigJSON(TypedDict):
    """``PicompactConfig.to_json()``, with Pi's own key names (the settings keys): what ``pi config --json``
    starts with."""

    enabled: bool
    mode: str | None
    cap: Any  # the cap in tokens, None (the default) or false (no cap)
    lookupModel: str | None
    crossSession: str | bool
    prune: bool
    sources: dict[str, str]
    warnings: list[str]
    projectTrusted: bool


@dataclass(frozen=True)
class PicompactConfig:
    """The effective ``picompact`` settings; None means "not set" (the default applies)."""

    enabled: bool = True
    mode: str | None = None
    cap: int | None = None
    no_cap: bool = False
    lookup_model: str | None = None
    cross_session: str | None = "project"  # None: off (``crossSession: false``)
    prune: bool = True
    sources: dict[str, str] = field(default_factory=dict)  # key -> "global" | "project"
    warnings: tuple[str, ...] = ()
    project_trusted: bool = False

    def to_json(self) -> PicompactConfigJSON:
        return {
            "enabled": self.enabled,
            "mode": self.mode,
            "cap": False if self.no_cap else self.cap,
            "lookupModel": self.lookup_model,
            "crossSession": self.cross_session or False,
            "prune": self.prune,
            "sources": self.sources,
            "warnings": list(self.warnings),
            "projectTrusted": self.project_trusted,
        }

    def cap_args(self) -> list[str]:
        """The ``compact`` flags that say the same as this cap setting."""
        if self.no_cap:
            return ["--no-cap"]
        return ["--cap", str(self.cap)] if self.cap is not None else []


def parse_config(
    merged: Mapping[str, Any], where: Mapping[str, str] | None = None, project_trusted: bool = False
) -> PicompactConfig:
    """The ``picompact`` object of merged settings, validated key by key."""
    raw = merged.get(SETTINGS_KEY)
    warnings: list[str] = []
    if raw is None:
        return PicompactConfig(project_trusted=project_trusted)
    if not isinstance(raw, dict):
        return PicompactConfig(
            warnings=(f"settings: {SETTINGS_KEY} must be an object; ignored",), project_trusted=project_trusted
        )
    enabled = True
    mode = cap = lookup = None
    no_cap = False
    value = raw.get("enabled")
    if isinstance(value, bool):
        enabled = value
    elif value is not None:
        warnings.append(f"settings: {SETTINGS_KEY}.enabled must be true or false (got {value!r}); ignored")
    value = raw.get("mode")
    if value in MODES:
        mode = value
    elif value is not None:
        warnings.append(f"settings: {SETTINGS_KEY}.mode must be verbatim or summary (got {value!r}); ignored")
    value = raw.get("cap")
    if value is False:
        no_cap = True
    elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        cap = value
    elif value is not None:
        warnings.append(
            f"settings: {SETTINGS_KEY}.cap must be a number of tokens, null or false (got {value!r}); ignored"
        )
    value = raw.get("lookupModel")
    if isinstance(value, str) and "/" in value.strip("/"):
        lookup = value.strip()
    elif value is not None:
        warnings.append(f"settings: {SETTINGS_KEY}.lookupModel must be PROVIDER/ID (got {value!r}); ignored")
    cross: str | None = "project"
    value = raw.get("crossSession")
    if value is False:
        cross = None
    elif value in CROSS_SESSION:
        cross = value
    elif value is not None:
        warnings.append(
            f'settings: {SETTINGS_KEY}.crossSession must be "project", "all" or false (got {value!r}); ignored'
        )
    prune = True
    value = raw.get("prune")
    if isinstance(value, bool):
        prune = value
    elif value is not None:
        warnings.append(f"settings: {SETTINGS_KEY}.prune must be true or false (got {value!r}); ignored")
    sources = {k: v for k, v in (where or {}).items() if k in raw}
    return PicompactConfig(enabled, mode, cap, no_cap, lookup, cross, prune, sources, tuple(warnings), project_trusted)


def load_config(cwd: str | os.PathLike[str], project_trusted: bool | None = None) -> PicompactConfig:
    """The effective configuration for a Pi session working in ``cwd``.

    ``project_trusted`` None follows Pi's stored trust decision (as ``load_settings`` does)."""
    loaded = load_settings(cwd, project_trusted=project_trusted)
    where: dict[str, str] = {}
    for layer in loaded.layers:
        own = layer.data.get(SETTINGS_KEY)
        if isinstance(own, dict):
            for key in own:
                where[key] = layer.scope
    config = parse_config(loaded.merged, where, loaded.project_trusted)
    if config.cross_session == "all" and where.get("crossSession") == "project":
        config = _narrowed(config, loaded, cwd, project_trusted)
    if loaded.warnings:
        config = replace(config, warnings=(*loaded.warnings, *config.warnings))
    return config


def _narrowed(
    config: PicompactConfig, loaded: LoadedSettings, cwd: str | os.PathLike[str], project_trusted: bool | None
) -> PicompactConfig:
    """``config`` without the project's ``crossSession: "all"`` unless the project is trusted for certain: the
    caller says so (``project_trusted`` True: Pi's own answer for the session), or Pi trusts it without asking.
    Where Pi would ask, ``load_settings`` reads the project's settings, but a repository must not make the search
    read every other project's sessions; the user's own settings decide then."""
    from pi_compact.pi.settings import project_trust_decision

    if project_trusted is True or (project_trusted is None and project_trust_decision(cwd) is True):
        return config
    own = next((layer for layer in loaded.layers if layer.scope == "global"), None)
    mine = parse_config(own.data if own is not None else {})
    project = next((layer for layer in loaded.layers if layer.scope == "project"), None)
    where = project.path if project is not None else "project settings"
    warning = (
        f'{where}: {SETTINGS_KEY}.crossSession "all" ignored: Pi does not trust this project without asking, '
        "and only your own settings (or a trusted project's) widen context_search_sessions to other projects"
    )
    sources = dict(config.sources)
    own_settings = own.data.get(SETTINGS_KEY) if own is not None else None
    if isinstance(own_settings, dict) and "crossSession" in own_settings:
        sources["crossSession"] = "global"
    else:
        sources.pop("crossSession", None)
    return replace(config, cross_session=mine.cross_session, sources=sources, warnings=(*config.warnings, warning))
