"""The dashboard's first paint, rendered on the server.

``/`` arrives with the newest tasks already in the task table, from the query the JSON API serves, and with
the indexer's health in the header, so a page saved, printed or screenshotted before its script has run shows
them (``chromium --headless --screenshot`` does not wait for the script's requests). ``app.js`` then renders
every page, this one included, from the JSON API; the markup here mirrors its ``tasksPage`` so the swap is
invisible. The tooltips' words live in ``static/words.json``, inlined into the page for the script: one
source for both renderers.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any

from ovig_node.api import queries
from ovig_node.api.dependencies import ApiState
from ovig_node.api.indexer import IndexerStatus

STATIC = Path(__file__).parent / "static"
WORDS: dict[str, dict[str, str]] = json.loads((STATIC / "words.json").read_text())
TEMPLATE = (STATIC / "index.html").read_text()
PAGE = 25  # tasks per page, as app.js's PAGE
# The task table's columns, as app.js's tasksPage names them (their tooltips: WORDS["headers"]); True: numeric.
TASK_COLUMNS = (
    ("task", False),
    ("status", False),
    ("owner", False),
    ("provider", False),
    ("reward", True),
    ("steps N / stride s / intervals K", True),
    ("batches committed / opened", True),
    ("open disputes", True),
    ("posted", False),
)
EN_DASH = "\u2013"  # the pager's range, as app.js writes it
TASK_STATES = ("posted", "accepted", "committed", "finalized", "slashed", "cancelled", "abandoned")


def index_html(state: ApiState) -> str:
    """The dashboard page with the first page of tasks, newest first, and the indexer's health filled in."""
    with state.store.snapshot() as db:
        page = json.loads(
            queries.list_tasks(db, owner=None, provider=None, status=None, descending=True, limit=PAGE, offset=0)
        )
    names = {**state.settings.own_watchers, **state.names}
    # "<" escaped: the JSON sits in a <script> element, which only "</script" could end early.
    words = json.dumps(WORDS, separators=(",", ":")).replace("<", "\\u003c")
    return (
        TEMPLATE.replace("<!--words-->", words)
        .replace("<!--health-->", _esc(health_line(state.indexer.status)))
        .replace("<!--view-->", tasks_view(page, names))
    )


def health_line(status: IndexerStatus) -> str:
    """The header's line, as app.js's health() writes it."""
    shown = (status.chain_id, status.head, status.indexed, status.lag)
    chain, head, indexed, lag = ("?" if value is None else value for value in shown)
    return f"chain {chain} · head {head} · indexed {indexed} · lag {lag}"


def tasks_view(page: dict[str, Any], names: dict[str, str]) -> str:
    """app.js's tasksPage with no filter, at offset 0."""
    rows = "".join(_task_row(task, names) for task in page["items"])
    if not rows:
        rows = f'<tr><td colspan="{len(TASK_COLUMNS)}" class="muted">none</td></tr>'
    head = "".join(_header(label, num=num) for label, num in TASK_COLUMNS)
    options = '<option value="">any status</option>' + "".join(f'<option value="{s}">{s}</option>' for s in TASK_STATES)
    total, shown = page["total"], len(page["items"])
    shown_range = f"{1 if total else 0}{EN_DASH}{shown} of {total}"
    older = f'<a href="#/?offset={PAGE}">older →</a>' if total > PAGE else ""
    return f"""<h1>Tasks <span class="muted">{total}</span></h1>
    <form class="filters" id="filters">
      <select name="status">{options}</select>
      <input name="owner" placeholder="owner 0x…" value="" size="44">
      <input name="provider" placeholder="provider 0x…" value="" size="44">
      <button>filter</button>
    </form>
    <section><table id="tasks"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>
      <div class="pager"><span class="muted">{shown_range}</span>{older}</div></section>"""


def _header(label: str, *, num: bool) -> str:
    """A column header with its tooltip, as app.js's table()."""
    numeric = ' class="num"' if num else ""
    return f'<th{numeric} title="{_esc(WORDS["headers"][label])}">{_esc(label)}</th>'


def _task_row(t: dict[str, Any], names: dict[str, str]) -> str:
    return f"""<tr data-task="{t["task"]}">
      <td><a href="#/tasks/{t["task"]}">task {t["task"]}</a></td><td>{badge(t["status"])}</td>
      <td>{who(t["owner"], names)}</td><td>{who(t["provider"], names)}</td><td class="num">{eth(t["reward"])}</td>
      <td class="num">{t["total_steps"]} / {t["stride"]} / {t["intervals"]}</td>
      <td class="num">{t["committed_batches"]} / {t["opened_batches"]} of {t["batch_count"]}</td>
      <td class="num">{t["open_disputes"]}</td><td>{when(t["posted_at"])}</td></tr>"""


def badge(state: str) -> str:
    """A state as app.js's badge(): its name, its colour (style.css) and what it means on hover."""
    meaning = WORDS["states"].get(state, "")
    return (
        f'<span class="badge {_esc(state)}" data-status="{_esc(state)}" title="{_esc(meaning)}">'
        + _esc(state.replace("_", " "))
        + "</span>"
    )


def who(address: str | None, names: dict[str, str]) -> str:
    if not address:
        return '<span class="muted">—</span>'
    short = f"{address[:6]}…{address[-4:]}"
    label = names.get(address)
    return f'<span class="mono" title="{_esc(address)}">{_esc(f"{label} ({short})" if label else short)}</span>'


def eth(wei: str) -> str:
    """Wei (a decimal string) as ETH, to at most 6 decimals, cut not rounded, as app.js's eth()."""
    whole, frac = divmod(int(wei), 10**18)
    digits = f"{frac:018d}"[:6].rstrip("0")
    return f"{whole}{'.' + digits if digits else ''} ETH"


def when(unix: int | None) -> str:
    """Chain time as the server's clock shows it (the script shows the browser's)."""
    return "—" if unix is None else time.strftime("%H:%M:%S", time.localtime(unix))


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)
