"""The review app's pages as Jinja2 templates (autoescaped: every text from a suite, a run or a
reviewer is shown as text) and its one stylesheet, inlined and allowed by its hash in the
Content-Security-Policy. No script, no external resource; plain forms work with the keyboard."""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root { --ink:#1b1f24; --muted:#5b6470; --line:#d9dee5; --panel:#f5f7fa; --accent:#0b5d8f; --ok:#1d7a46; --warn:#b34700; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
       font-family: "DejaVu Sans", "Liberation Sans", "Helvetica Neue", Arial, sans-serif; font-size: 15px; }
header.top { background: #10324a; color: #fff; padding: 10px 0; }
header.top .inner, main { max-width: 1060px; margin: 0 auto; padding: 0 24px; }
header.top .inner { display: flex; align-items: center; gap: 18px; flex-wrap: wrap; }
header.top a { color: #fff; }
header.top .who { margin-left: auto; }
header.top form { display: inline; }
main { padding-top: 12px; padding-bottom: 48px; }
h1 { font-size: 1.4rem; margin: 10px 0; }
h2 { font-size: 1.1rem; margin: 18px 0 6px; }
.block { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; margin: 10px 0; background: #fcfdfe; }
.block h2 { margin-top: 0; }
.text, pre.response { white-space: pre-wrap; word-break: break-word; margin: 0; }
pre.response, .message { background: var(--panel); padding: 8px 10px; border-radius: 6px; font-family: inherit; }
.message .role { font-size: .8rem; color: var(--muted); text-transform: uppercase; }
ol.options { margin: 0; padding-left: 0; list-style: none; }
ol.options li { padding: 2px 0; }
.gold { font-weight: 700; color: var(--ok); }
.tag { color: var(--muted); font-size: .85rem; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; padding: 8px 12px; }
legend { font-weight: 700; padding: 0 4px; }
.question { margin: 0 0 6px; }
label.choice { display: block; padding: 4px 6px; border-radius: 4px; cursor: pointer; }
label.choice:hover { background: var(--panel); }
label.choice .def { color: var(--muted); font-size: .88rem; }
input:focus-visible, button:focus-visible, textarea:focus-visible, a:focus-visible { outline: 3px solid #f0a500; outline-offset: 2px; }
textarea { width: 100%; min-height: 5em; font: inherit; }
button { font: inherit; padding: 6px 14px; border-radius: 5px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
.actions { display: flex; gap: 10px; margin: 12px 0; flex-wrap: wrap; }
.notice { background: #eef7f0; border: 1px solid #bfe0c9; padding: 6px 10px; border-radius: 5px; }
.error { background: #fff1ec; border: 1px solid #f2c3b0; padding: 6px 10px; border-radius: 5px; color: var(--warn); }
progress { width: 240px; }
.status-rated { color: var(--ok); } .status-skipped { color: var(--warn); }
.muted { color: var(--muted); }
"""

CSS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(CSS.encode("utf-8")).digest()).decode("ascii")

#: no script at all, the one inline stylesheet by its hash, forms post only here, never framed
CSP = f"default-src 'none'; style-src '{CSS_HASH}'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

TEMPLATES: dict[str, str] = {}

TEMPLATES["base.html"] = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{% block title %}Clinician review{% endblock %} · medresilience</title><link rel="icon" href="data:,">
<style>{{ css|safe }}</style></head><body>
<header class="top"><div class="inner"><strong>medresilience · clinician review</strong>
{% if reviewer %}<a href="/">My queue</a><a href="/rubric">Rubric</a>{% if reviewer.admin %}<a href="/admin">Reviewers</a>{% endif %}
<span class="who">Signed in as {{ reviewer.name }}</span>
<form method="post" action="/logout"><input type="hidden" name="csrf" value="{{ csrf }}"><button class="secondary" type="submit">Sign out</button></form>
{% endif %}</div></header>
<main>{% block main %}{% endblock %}</main></body></html>
"""

TEMPLATES["login.html"] = """{% extends "base.html" %}{% block title %}Sign in{% endblock %}{% block main %}
<h1>Sign in</h1>
{% if error %}<p class="error" role="alert">{{ error }}</p>{% endif %}
<form method="post" action="/login">
<input type="hidden" name="csrf" value="{{ login_csrf }}">
<p><label for="name">Reviewer name</label><br><input id="name" name="name" autocomplete="username" required autofocus value="{{ name }}"></p>
<p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="current-password" required></p>
<div class="actions"><button type="submit">Sign in</button></div>
</form>
<p class="muted">Your password was given to you once by the study's administrator (<code>medres review add-reviewer</code>).</p>
{% endblock %}
"""

TEMPLATES["queue.html"] = """{% extends "base.html" %}{% block title %}My queue{% endblock %}{% block main %}
<h1>{{ rubric.title }}</h1>
<p>Progress: <progress max="{{ progress.total }}" value="{{ progress.rated }}">{{ progress.rated }} of {{ progress.total }}</progress>
<strong>{{ progress.rated }}</strong> of {{ progress.total }} rated, {{ progress.skipped }} skipped, {{ progress.todo }} to do.</p>
{% if next_task %}<p><a href="/tasks/{{ next_task.task_id }}">Continue with task {{ next_task.position + 1 }}</a></p>
{% elif progress.total %}<p class="notice">All your tasks are rated. Thank you.</p>{% else %}<p>No tasks are assigned to you.</p>{% endif %}
<table><thead><tr><th>#</th><th>Task</th><th>Status</th></tr></thead><tbody>
{% for t in tasks %}<tr><td>{{ t.position + 1 }}</td><td><a href="/tasks/{{ t.task_id }}">Task {{ t.position + 1 }}</a></td>
<td class="status-{{ t.status or 'todo' }}">{{ {'rated': 'rated', 'skipped': 'skipped (come back later)'}.get(t.status, 'to do') }}</td></tr>
{% endfor %}</tbody></table>
{% endblock %}
"""

TEMPLATES["_blocks.html"] = """{% for b in blocks %}<section class="block"><h2>{{ b.title }}</h2>
{% if b.kind == 'text' %}<p class="text">{{ b.text }}</p>
{% elif b.kind == 'response' %}<pre class="response">{{ b.text }}</pre>
{% elif b.kind == 'options' %}<ol class="options">{% for o in b.options %}<li{% if o[2] %} class="gold"{% endif %}>{{ o[0] }}. {{ o[1] }}{% if o[2] %} <span class="tag">(keyed answer)</span>{% endif %}</li>{% endfor %}</ol>
{% elif b.kind == 'list' %}<ul>{% for it in b['items'] %}<li><span class="tag">{{ it[0] }}</span><br><span class="text">{{ it[1] }}</span></li>{% endfor %}</ul>
{% elif b.kind == 'facts' %}<table>{% for f in b.facts %}<tr><th>{{ f[0] }}</th><td>{{ f[1] }}</td></tr>{% endfor %}</table>
{% elif b.kind == 'messages' %}{% for m in b.messages %}<div class="message"><div class="role">{{ m[0] }}</div><p class="text">{{ m[1] }}</p></div>{% endfor %}
{% endif %}</section>{% endfor %}"""

TEMPLATES["task.html"] = """{% extends "base.html" %}{% block title %}Task {{ task.position + 1 }}{% endblock %}{% block main %}
<h1>Task {{ task.position + 1 }} of {{ progress.total }} <span class="tag">{{ rubric.title }}</span></h1>
<p class="muted">{{ progress.rated }} rated, {{ progress.skipped }} skipped, {{ progress.todo }} to do.
{% if task.status == 'rated' %}You rated this task; submitting again replaces your rating.{% elif task.status == 'skipped' %}You skipped this task earlier.{% endif %}</p>
{% if saved %}<p class="notice" role="status">Saved.</p>{% endif %}
{% if error %}<p class="error" role="alert">{{ error }}</p>{% endif %}
<p>{{ rubric.instructions }}</p>
{% include "_blocks.html" %}
<form method="post" action="/tasks/{{ task.task_id }}">
<input type="hidden" name="csrf" value="{{ csrf }}">
{% for d in rubric.dimensions %}<fieldset><legend>{{ d.label }}</legend><p class="question">{{ d.question }}</p>
{% for c in d.choices %}<label class="choice"><input type="radio" name="dim_{{ d.key }}" value="{{ c.value }}"{% if values.get(d.key) == c.value %} checked{% endif %}>
<strong>{{ c.label }}</strong> <span class="def">{{ c.definition }}</span></label>
{% endfor %}</fieldset>
{% endfor %}
{% if rubric.flags %}<fieldset><legend>Flags</legend>{% for f in rubric.flags %}<label class="choice"><input type="checkbox" name="flag" value="{{ f.key }}"{% if f.key in flags %} checked{% endif %}>
<strong>{{ f.label }}</strong> <span class="def">{{ f.definition }}</span></label>{% endfor %}</fieldset>{% endif %}
<p><label for="comment">Comment (optional)</label><br><textarea id="comment" name="comment" maxlength="4000">{{ comment }}</textarea></p>
<div class="actions"><button type="submit" name="action" value="submit">Submit rating</button>
<button class="secondary" type="submit" name="action" value="skip">Skip for now</button></div>
</form>
<p>{% if prev_task %}<a href="/tasks/{{ prev_task }}">Previous task</a> · {% endif %}<a href="/">Back to my queue</a>{% if next_task %} · <a href="/tasks/{{ next_task }}">Next task</a>{% endif %}</p>
{% endblock %}
"""

TEMPLATES["rubric.html"] = """{% extends "base.html" %}{% block title %}Rubric{% endblock %}{% block main %}
<h1>{{ rubric.title }}</h1><p>{{ rubric.instructions }}</p>
{% for d in rubric.dimensions %}<h2>{{ d.label }}</h2><p>{{ d.question }}</p><table>
{% for c in d.choices %}<tr><th>{{ c.label }}</th><td>{{ c.definition }}</td></tr>{% endfor %}</table>{% endfor %}
{% if rubric.worst_case %}<h2>{{ rubric.worst_case.label }}</h2><p>{{ rubric.worst_case.definition }}</p>{% endif %}
{% if rubric.flags %}<h2>Flags</h2><table>{% for f in rubric.flags %}<tr><th>{{ f.label }}</th><td>{{ f.definition }}</td></tr>{% endfor %}</table>{% endif %}
{% endblock %}
"""

TEMPLATES["admin.html"] = """{% extends "base.html" %}{% block title %}Reviewers{% endblock %}{% block main %}
<h1>Reviewers</h1>
{% if notice %}<p class="notice" role="status">{{ notice }}</p>{% endif %}
<table><thead><tr><th>Reviewer</th><th>Rated</th><th>Skipped</th><th>To do</th><th>State</th><th></th></tr></thead><tbody>
{% for r in rows %}<tr><td>{{ r.name }}{% if r.admin %} <span class="tag">(admin)</span>{% endif %}</td><td>{{ r.rated }}</td><td>{{ r.skipped }}</td><td>{{ r.todo }}</td>
<td>{{ 'revoked' if r.revoked else ('active' if r.has_password else 'no password yet') }}</td>
<td>{% if not r.revoked and r.name != reviewer.name %}<form method="post" action="/admin/revoke"><input type="hidden" name="csrf" value="{{ csrf }}">
<input type="hidden" name="name" value="{{ r.name }}"><button class="secondary" type="submit">Revoke</button></form>{% endif %}</td></tr>
{% endfor %}</tbody></table>
<p class="muted">Revoking signs the reviewer out at once and keeps their ratings; <code>medres review add-reviewer REVIEW NAME --reset</code> reinstates them with a new password.</p>
{% endblock %}
"""

TEMPLATES["message.html"] = """{% extends "base.html" %}{% block title %}{{ heading }}{% endblock %}{% block main %}
<h1>{{ heading }}</h1><p>{{ message }}</p><p><a href="/">Back to my queue</a></p>{% endblock %}
"""
