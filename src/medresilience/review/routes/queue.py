"""A reviewer's work: GET / (their queue and progress), GET /next, GET /rubric, and GET/POST
/tasks/{id} (show and rate one task). A task is read and written only through the reviewer's own
queue (`WHERE task_id = ? AND reviewer = ?`), so another reviewer's task is a 404 like a missing
one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from ..auth import same_token
from ..rubrics import part_key, part_label_key, parts_of
from ..web import ReviewState, SignedIn, State, Who

MAX_COMMENT = 4000

router = APIRouter()


@router.get("/")
def queue(state: State, who: Who):
    r, s = who.reviewer, who.session
    tasks = state.db.tasks_for(r.name)
    return state.page("queue.html", reviewer=r, csrf=s.csrf, tasks=tasks, progress=state.db.progress(r.name), next_task=state.db.next_task(r.name))


@router.get("/next")
def next_task(state: State, who: Who):
    t = state.db.next_task(who.reviewer.name)
    return RedirectResponse(f"/tasks/{t.task_id}" if t else "/", status_code=303)


@router.get("/rubric")
def rubric_page(state: State, who: Who):
    return state.page("rubric.html", reviewer=who.reviewer, csrf=who.session.csrf)


def _own_task(state: ReviewState, who: SignedIn, task_id: str):
    """The task if it is in this reviewer's queue, else None."""
    return state.db.task(int(task_id), who.reviewer.name) if task_id.isdigit() and len(task_id) < 12 else None


def _render_task(
    state: ReviewState, who: SignedIn, task, status: int = 200, error: str | None = None, values=None, flags=None, comment=None, saved: bool = False
) -> HTMLResponse:
    r = who.reviewer
    order = [t.task_id for t in state.db.tasks_for(r.name)]
    i = order.index(task.task_id)
    return state.page(
        "task.html",
        status,
        reviewer=r,
        csrf=who.session.csrf,
        task=task,
        blocks=task.display or [],
        parts=parts_of(task.display),
        offered={d.key: d.offered(task.display) for d in state.rubric.dimensions},
        progress=state.db.progress(r.name),
        values=task.values if values is None else values,
        flags=task.flags if flags is None else flags,
        comment=task.comment if comment is None else comment,
        error=error,
        saved=saved,
        prev_task=order[i - 1] if i > 0 else None,
        next_task=order[i + 1] if i + 1 < len(order) else None,
    )


@router.get("/tasks/{task_id}")
def show_task(request: Request, task_id: str, state: State, who: Who):
    task = _own_task(state, who, task_id)
    if task is None:
        return state.not_found(who)
    return _render_task(state, who, task, saved=request.query_params.get("saved") == "1")


@router.post("/tasks/{task_id}")
async def rate_task(request: Request, task_id: str, state: State, who: Who):
    form = await request.form()
    if not same_token(who.session.csrf, form.get("csrf")):
        return state.refused(who)
    task = _own_task(state, who, task_id)
    if task is None:
        return state.not_found(who)
    action = form.get("action")
    if action not in ("submit", "skip"):
        return _render_task(state, who, task, 400, "Choose Submit rating or Skip for now.")
    rating = _read_rating(state, form, action, task)
    if isinstance(rating, tuple):
        error, values, flags, comment = rating
        return _render_task(state, who, task, 400, error, values, flags, comment)
    r = who.reviewer
    ok = await run_in_threadpool(
        state.db.submit, task.task_id, r.name, "rated" if action == "submit" else "skipped", rating["values"], rating["flags"], rating["comment"]
    )
    if not ok:  # pragma: no cover - checked above; the write checks again
        return state.not_found(who)
    nxt = state.db.next_task(r.name, after=task.position)
    return RedirectResponse(f"/tasks/{nxt.task_id}?saved=1" if nxt else "/", status_code=303)


def _read_parts(rubric: Any, form: FormData, task: Any, values: dict[str, str], flags: list[str]) -> str | None:
    """Each part's rating (`part_N`) and labels (`partlabel_N`) into values and flags; why not, if not."""
    known = {f.key for f in rubric.part_labels}
    for n in range(1, len(parts_of(task.display)) + 1):
        v = form.get(f"part_{n}")
        if v not in (None, ""):
            if v not in rubric.per_part.values:
                return f"'{v}' is not a rating of a paragraph."
            values[part_key(n)] = str(v)
        labels = [str(x) for x in form.getlist(f"partlabel_{n}")]
        if any(x not in known for x in labels):
            return "Unknown label."
        flags += [part_label_key(n, x) for x in labels]
    return None


def _read_rating(state: ReviewState, form: FormData, action: str, task: Any) -> dict[str, Any] | tuple[str, Any, Any, Any]:
    """The rating a form holds ({"values", "flags", "comment"}), or why it is refused with what
    the form is shown again with (error, values, flags, comment; None: the stored one)."""
    rubric = state.rubric
    values: dict[str, str] = {}
    for d in rubric.dimensions:
        v = form.get(f"dim_{d.key}")
        if v is None or v == "":
            continue
        if v not in {c.value for c in d.offered(task.display)}:
            return f"'{v}' is not a value of {d.label}.", None, None, None
        values[d.key] = str(v)
    known = {f.key for f in rubric.flags}
    flags = [str(f) for f in form.getlist("flag")]
    if any(f not in known for f in flags):
        return "Unknown flag.", values, flags, None
    if rubric.per_part is not None:
        problem = _read_parts(rubric, form, task, values, flags)
        if problem:
            return problem, values, flags, None
    comment = str(form.get("comment") or "")
    if len(comment) > MAX_COMMENT:
        return f"The comment is longer than {MAX_COMMENT} characters.", values, flags, comment
    if action == "submit":
        missing = [d.label for d in rubric.dimensions if d.required and d.key not in values]
        if rubric.per_part is not None:
            missing += [f"paragraph {n}" for n in range(1, len(parts_of(task.display)) + 1) if part_key(n) not in values]
        if missing:
            return "Rate every dimension before submitting (missing: " + ", ".join(missing) + "), or skip the task for now.", values, flags, comment
    return {"values": values, "flags": flags, "comment": comment}
