"""Session files shaped for particular tests (the builder itself is ``tests.sessionkit``)."""

from __future__ import annotations

from pathlib import Path


def side_branch_session(path: Path, question: str) -> tuple[Path, str]:
    """Six plain turns, then ``question`` (and an answer) branching off the second turn's last reply, so the file
    ends on the side branch. Returns the written file and the id of the main branch's tip."""
    from tests.sessionkit import simple_session

    sb = simple_session(turns=6, size=400)
    main_tip = sb.leaf
    sb.user(question, parent=sb.entries[8]["id"])
    sb.assistant("side answer")
    return sb.write(path), main_tip
