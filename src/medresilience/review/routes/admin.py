"""For admins: GET /admin (every reviewer's progress) and POST /admin/revoke (sign a reviewer out
at once; their ratings stay). To a reviewer who is not an admin these pages do not exist (404)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from ..auth import same_token
from ..web import State, Who

router = APIRouter()


@router.get("/admin")
def admin(request: Request, state: State, who: Who):
    r = who.reviewer
    if not r.admin:
        return state.no_such_page(who)
    rows = [{**vars(x), **state.db.progress(x.name)} for x in state.db.reviewers()]
    return state.page("admin.html", reviewer=r, csrf=who.session.csrf, rows=rows, notice=request.query_params.get("revoked") and "Reviewer revoked.")


@router.post("/admin/revoke")
async def revoke(request: Request, state: State, who: Who):
    r = who.reviewer
    form = await request.form()
    if not r.admin:
        return state.no_such_page(who)
    if not same_token(who.session.csrf, form.get("csrf")):
        return state.refused(who)
    name = str(form.get("name") or "")
    target = state.db.reviewer(name)
    if target is None or target.name == r.name:
        return state.message(who, 400, "Not revoked", "Choose another reviewer.")
    await run_in_threadpool(state.db.revoke, name, r.name)
    return RedirectResponse("/admin?revoked=1", status_code=303)
