"""Read model rows to responses. Every function reads one snapshot (``Store.snapshot``) and makes no RPC
call; functions about one task or dispute return None when there is no such id. Paginated lists come back
as JSON bytes built by SQLite (see ``_json_row``), everything else as response models.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from ovig_node.api import models as m
from ovig_node.api.timelines import timeline_entries
from ovig_node.api.watchers import WatcherVerdict, WatcherVerdicts
from ovig_node.protocol.attestation import AttestedVerdict

Ballot = Literal["valid", "faulty", "unavailable", "abstained"]  # m.Vote.vote
# a revealed Vote, as the API names it
BALLOTS: dict[int, Ballot] = {1: "valid", 2: "faulty", 3: "unavailable", 4: "abstained"}

Row = sqlite3.Row
M = TypeVar("M", bound=BaseModel)
TASK_COLUMNS = "t.*, b.timestamp AS posted_at"
TASK_FROM = "tasks t LEFT JOIN blocks b ON b.hash = t.posted_hash"


def _json_row(model: type[BaseModel], table: str = "", **columns: str) -> str:
    """An SQL expression that builds one ``model`` as a JSON object from a row: each field from the column
    of its name (or ``columns[field]``). List pages are serialised by SQLite, in C, with no Python object
    per row; the field names come from the model, and the API's tests compare both paths."""
    prefix = f"{table}." if table else ""
    return "json_object(" + ", ".join(f"'{f}', {columns.get(f, prefix + f)}" for f in model.model_fields) + ")"


TASK_JSON = _json_row(m.TaskSummary, "t", posted_at="b.timestamp")
DISPUTE_JSON = _json_row(m.DisputeSummary)
PAYOUT_JSON = _json_row(m.Payout)


def _page(
    db: sqlite3.Connection,
    row_json: str,
    source: str,
    where: Sequence[tuple[str, Any]],
    order: str,
    *,
    limit: int,
    offset: int,
    count_from: str | None = None,
) -> bytes:
    """A ``Page`` as JSON: rows of ``source`` matching every ``(condition, value)`` in ``where``, built by
    ``row_json``, and their total (counted in ``count_from`` when joins that only add columns can go)."""
    clause = " AND ".join(condition for condition, _ in where) or "1"
    values = tuple(value for _, value in where)
    (total,) = db.execute(f"SELECT COUNT(*) FROM {count_from or source} WHERE {clause}", values).fetchone()
    rows = db.execute(
        f"SELECT {row_json} FROM {source} WHERE {clause} ORDER BY {order} LIMIT ? OFFSET ?", (*values, limit, offset)
    )
    items = ",".join(row[0] for row in rows)
    return f'{{"total":{total},"limit":{limit},"offset":{offset},"items":[{items}]}}'.encode()


# --- tasks ---------------------------------------------------------------------------------------


def list_tasks(
    db: sqlite3.Connection,
    *,
    owner: str | None,
    provider: str | None,
    status: str | None,
    descending: bool,
    limit: int,
    offset: int,
) -> bytes:
    """A ``Page[TaskSummary]``, as JSON."""
    where = [
        (f"t.{column} = ?", value)
        for column, value in (("owner", owner), ("provider", provider), ("status", status))
        if value is not None
    ]
    order = "t.task DESC" if descending else "t.task"
    return _page(db, TASK_JSON, TASK_FROM, where, order, limit=limit, offset=offset, count_from="tasks t")


def get_task(db: sqlite3.Connection, task: int) -> m.TaskDetail | None:
    row = _task_row(db, task)
    if row is None:
        return None
    terms = json.loads(row["terms"])
    windows = terms["windows"]
    slashed = (
        m.Slash(
            batch=row["slashed_batch"],
            by=row["slashed_by"],
            dispute=row["slashed_dispute"] or None,
            lead=row["lead"],
            lead_paid=bool(row["lead_paid"]),
        )
        if row["status"] == "slashed"
        else None
    )
    return m.TaskDetail(
        **_summary(row).model_dump(),
        spec_cid=row["spec_cid"],
        terms=m.Terms(
            spec_hash=terms["specHash"],
            init_digest=terms["initDigest"],
            reward=str(terms["reward"]),
            provider_bond=str(terms["providerBond"]),
            challenger_bond=str(terms["challengerBond"]),
            replay_seconds=terms["replaySeconds"],
            total_steps=terms["totalSteps"],
            stride=terms["stride"],
            deadline=terms["deadline"],
            intervals_per_batch=terms["intervalsPerBatch"],
            sample_bps=terms["sampleBps"],
            windows=m.Windows(
                opening=windows["openingWindow"],
                challenge=windows["challengeWindow"],
                reveal=windows["challengeRevealWindow"],
            ),
        ),
        challenge_end=row["challenge_end"],
        pending_commits=row["pending_commits"],
        batches=[_batch(b) for b in db.execute("SELECT * FROM batches WHERE task = ? ORDER BY j", (task,))],
        disputes=[_dispute(d) for d in db.execute("SELECT * FROM disputes WHERE task = ? ORDER BY dispute", (task,))],
        payouts=[
            _payout(p) for p in db.execute("SELECT * FROM payouts WHERE task = ? ORDER BY block, log_index", (task,))
        ],
        slashed=slashed,
    )


def task_intervals(
    db: sqlite3.Connection,
    task: int,
    watchers: WatcherVerdicts,
    *,
    limit: int,
    offset: int,
    names: dict[str, str] | None = None,
    trusted: frozenset[str] = frozenset(),
) -> m.Page[m.Interval] | None:
    """Intervals ``offset ..`` of the task with the status the dashboard colours them by."""
    row = _task_row(db, task)
    if row is None:
        return None
    total, per_batch, stride, steps = row["intervals"], row["intervals_per_batch"], row["stride"], row["total_steps"]
    first, last = offset, min(total, offset + limit) - 1
    batches = {
        b["j"]: (b["status"], set(json.loads(b["sampled"] or "[]")))
        for b in db.execute(
            "SELECT j, status, sampled FROM batches WHERE task = ? AND j BETWEEN ? AND ?",
            (task, first // per_batch, max(first, last) // per_batch),
        )
    }
    opened = {
        o["k"]: o
        for o in db.execute("SELECT * FROM openings WHERE task = ? AND k BETWEEN ? AND ?", (task, first, last))
    }
    disputes: dict[int, list[Row]] = {}
    for d in db.execute(
        "SELECT * FROM disputes WHERE task = ? AND k BETWEEN ? AND ? ORDER BY dispute", (task, first, last)
    ):
        disputes.setdefault(d["k"], []).append(d)
    attested, attested_by = _attestations(db, task, first, last, names or {}, trusted)
    verdicts, scores = watchers.for_task(task), watchers.scores_for_task(task)
    items = []
    for k in range(first, last + 1):
        batch_status, sample = batches.get(k // per_batch, (None, set()))
        opening, watched, on_k = opened.get(k), verdicts.get(k), disputes.get(k, [])
        listed = attested.get(k, [])
        on_trust = any(a.trusted and a.sound for a in listed)
        status = _interval_status(
            batch_status is not None, k in sample, opening is not None, on_k, watched, attested=on_trust
        )
        # Unvalidated: every value comes from our own read model, and a page holds up to 4096 intervals
        # (validating them again would double this endpoint's time; the API tests check the shape).
        items.append(
            m.Interval.model_construct(
                k=k,
                batch=k // per_batch,
                end_step=min((k + 1) * stride, steps),
                status=status,
                sampled=k in sample,
                opened=opening is not None,
                start_digest=opening["start_digest"] if opening else None,
                end_digest=opening["end_digest"] if opening else None,
                disputes=[d["dispute"] for d in on_k],
                watcher=m.WatcherVerdict.model_construct(
                    verdict=watched.verdict, reason=watched.reason, report_cid=watched.report_cid
                )
                if watched
                else None,
                layer_one_score=scores.get(k),
                attestations=listed,
                attested_by=attested_by.get(k, 0),
                verified_by=_verified_by(on_k, listed) if status == m.IntervalState.VERIFIED else None,
            )
        )
    return m.Page[m.Interval](total=total, limit=limit, offset=offset, items=items)


UNDECIDED = frozenset({"none", "no_decision", "moot"})  # a dispute open, or ended deciding nothing about k


MAX_LISTED = 16  # attestations listed per interval, and watchers per task's coverage: trusted ones first


def _attestations(
    db: sqlite3.Connection, task: int, first: int, last: int, names: dict[str, str], trusted: frozenset[str]
) -> tuple[dict[int, list[m.IntervalAttestation]], dict[int, int]]:
    """(k -> its verified attestations (the projection kept only those), trusted ones first, then oldest first,
    at most MAX_LISTED; k -> how many there are): SQLite ranks and cuts them, however many keys attested."""
    marks = ",".join("?" * len(trusted))
    found: dict[int, list[m.IntervalAttestation]] = {}
    for a in db.execute(
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY watcher IN"
        f" ({marks}) DESC, block, log_index) AS rank FROM attestations WHERE task = ? AND k BETWEEN ? AND ?)"
        " WHERE rank <= ? ORDER BY k, rank",
        (*sorted(trusted), task, first, last, MAX_LISTED),
    ):
        found.setdefault(a["k"], []).append(
            m.IntervalAttestation.model_construct(
                watcher=a["watcher"],
                name=names.get(a["watcher"]),
                trusted=a["watcher"] in trusted,
                sound=a["verdict"] == AttestedVerdict.SOUND,
                profile=a["profile"],
                report_cid=a["report_cid"],
                attestation_cid=a["attestation_cid"],
                block=a["block"],
            )
        )
    counts = dict(
        db.execute(
            "SELECT k, COUNT(*) FROM attestations WHERE task = ? AND k BETWEEN ? AND ? AND verdict = ? GROUP BY k",
            (task, first, last, AttestedVerdict.SOUND),
        ).fetchall()
    )
    return found, counts


def task_coverage(
    db: sqlite3.Connection, task: int, *, names: dict[str, str], trusted: frozenset[str]
) -> m.Coverage | None:
    """How many opened intervals how many distinct watchers attested sound, and who."""
    row = _task_row(db, task)
    if row is None:
        return None
    opened = {o["k"] for o in db.execute("SELECT k FROM openings WHERE task = ?", (task,))}
    by_k: dict[int, set[str]] = {}
    by_watcher: dict[str, tuple[set[int], set[str]]] = {}
    for a in db.execute("SELECT * FROM attestations WHERE task = ? AND verdict = ?", (task, AttestedVerdict.SOUND)):
        by_k.setdefault(a["k"], set()).add(a["watcher"])
        intervals, profiles = by_watcher.setdefault(a["watcher"], (set(), set()))
        intervals.add(a["k"])
        profiles.add(a["profile"])
    counts = [min(len(by_k.get(k, ())), MAX_LISTED) for k in opened]  # the last bucket: MAX_LISTED or more
    ranked = sorted(by_watcher.items(), key=lambda item: (item[0] not in trusted, -len(item[1][0]), item[0]))
    return m.Coverage(
        intervals=row["intervals"],
        opened=len(opened),
        attested=sum(1 for n in counts if n),
        trusted_attested=sum(1 for k in opened if by_k.get(k, set()) & trusted),
        by_watchers=[counts.count(n) for n in range(max(counts, default=0) + 1)],
        profiles=len({p for _, profiles in by_watcher.values() for p in profiles}),
        watcher_count=len(by_watcher),
        watchers=[
            m.CoverageWatcher(
                watcher=w, name=names.get(w), trusted=w in trusted, intervals=len(ks), profiles=sorted(profiles)
            )
            for w, (ks, profiles) in ranked[:MAX_LISTED]
        ],
    )


def _interval_status(
    committed: bool,
    sampled: bool,
    opened: bool,
    disputes: list[Row],
    watched: WatcherVerdict | None,
    *,
    attested: bool = False,
) -> m.IntervalState:
    panel_valid = False
    if disputes:
        verdicts = {d["verdict"] for d in disputes}
        if "faulty" in verdicts:
            return m.IntervalState.FAULTY
        if verdicts & UNDECIDED:
            return m.IntervalState.DISPUTED
        panel_valid = any(_replay_found_valid(d) for d in disputes)
    if opened:
        # The owner's own watcher saying faulty outweighs anyone's attestation until a panel decides.
        disowned = watched is not None and watched.verdict != "valid"
        valid = panel_valid or (not disowned and (attested or watched is not None))
        return m.IntervalState.VERIFIED if valid else m.IntervalState.OPENED
    if sampled:
        return m.IntervalState.SAMPLED
    return m.IntervalState.COMMITTED if committed else m.IntervalState.PENDING


def _replay_found_valid(dispute: Row) -> bool:
    # A valid verdict on reason "unavailable" says the files were there, not that the replay passed.
    return bool(dispute["verdict"] == "valid" and dispute["reason"] == "out_of_bounds")


def _verified_by(disputes: list[Row], listed: list[m.IntervalAttestation]) -> m.VerifiedBy:
    """What made a verified interval so, in _interval_status's order: a panel's valid verdict on the replay, the
    first trusted sound attestation (trusted ones are listed first), else the API's own watcher's verdict."""
    for d in disputes:
        if _replay_found_valid(d):
            return m.VerifiedBy.model_construct(kind="panel", watcher=None, name=None, dispute=d["dispute"])
    for a in listed:
        if a.trusted and a.sound:
            return m.VerifiedBy.model_construct(kind="attestation", watcher=a.watcher, name=a.name, dispute=None)
    return m.VerifiedBy.model_construct(kind="watcher_state", watcher=None, name=None, dispute=None)


def task_openings(db: sqlite3.Connection, task: int) -> list[m.Opening] | None:
    row = _task_row(db, task)
    if row is None:
        return None
    per_batch = row["intervals_per_batch"]
    batches = {b["j"]: b for b in db.execute("SELECT * FROM batches WHERE task = ?", (task,))}
    openings = []
    for o in db.execute("SELECT * FROM openings WHERE task = ? ORDER BY k", (task,)):
        batch = batches.get(o["k"] // per_batch)
        window = batch["challenge_window_end"] if batch else None
        openings.append(
            m.Opening(
                k=o["k"],
                batch=o["k"] // per_batch,
                start_digest=o["start_digest"],
                end_digest=o["end_digest"],
                block=o["block"],
                opening_cid=batch["opening_cid"] if batch else None,
                challenge_window_end=max(window or 0, o["extended_until"] or 0) or None,
            )
        )
    return openings


def task_timeline(
    db: sqlite3.Connection,
    task: int,
    *,
    names: dict[str, str],
    head_time: int | None,
    trusted: frozenset[str] = frozenset(),
) -> list[m.TimelineEntry] | None:
    if _task_row(db, task) is None:
        return None
    return timeline_entries(db, task, names=names, head_time=head_time, trusted=trusted)


# --- disputes ------------------------------------------------------------------------------------


def list_disputes(db: sqlite3.Connection, *, task: int | None, status: str | None, limit: int, offset: int) -> bytes:
    """A ``Page[DisputeSummary]``, as JSON."""
    where = [(f"{column} = ?", value) for column, value in (("task", task), ("status", status)) if value is not None]
    return _page(db, DISPUTE_JSON, "disputes", where, "dispute", limit=limit, offset=offset)


def get_dispute(db: sqlite3.Connection, dispute: int) -> m.DisputeDetail | None:
    row = db.execute("SELECT * FROM disputes WHERE dispute = ?", (dispute,)).fetchone()
    if row is None:
        return None
    rounds = []
    # A round drawn again (its panel mostly silent) has a row per panel, in draw order.
    for r in db.execute("SELECT * FROM rounds WHERE dispute = ? ORDER BY round, block", (dispute,)):
        ballots = {
            v["panelist"]: v
            for v in db.execute("SELECT * FROM votes WHERE dispute = ? AND round = ?", (dispute, r["round"]))
        }
        panel = json.loads(r["panel"])
        votes = [
            m.Vote(
                panelist=p,
                committed=p in ballots,
                vote=BALLOTS.get(ballots[p]["vote"]) if p in ballots else None,
            )
            for p in panel
        ]
        rounds.append(
            m.Round(round=r["round"], panel=panel, commit_end=r["commit_end"], reveal_end=r["reveal_end"], votes=votes)
        )
    # What the settlement paid: every credit of the transaction in which the task contract settled it (the
    # panel's money handed to the committee among them), of each joined bond claimed back after it, and what
    # the committee paid the dispute's seats and appellants.
    payouts = db.execute(
        "SELECT * FROM payouts WHERE tx IN (SELECT tx FROM timeline WHERE name IN ('DisputeSettled', 'BondClaimed')"
        " AND json_extract(args, '$.dispute') = ?) OR (contract = 'AuditCommittee' AND dispute = ?)"
        " ORDER BY block, log_index",
        (dispute, dispute),
    )
    return m.DisputeDetail(
        **_dispute(row).model_dump(),
        commitment=row["commitment"],
        opened_block=row["opened_block"],
        rounds=rounds,
        appeals=[
            _from_row(m.Appeal, a)
            for a in db.execute("SELECT * FROM appeals WHERE dispute = ? ORDER BY round", (dispute,))
        ],
        payouts=[_payout(p) for p in payouts],
    )


# --- accounts ------------------------------------------------------------------------------------


def list_payouts(db: sqlite3.Connection, *, account: str | None, task: int | None, limit: int, offset: int) -> bytes:
    """A ``Page[Payout]``, as JSON."""
    where = [(f"{column} = ?", value) for column, value in (("account", account), ("task", task)) if value is not None]
    return _page(db, PAYOUT_JSON, "payouts", where, "block, log_index", limit=limit, offset=offset)


def list_credits(db: sqlite3.Connection, *, account: str | None) -> list[m.Credit]:
    rows = db.execute(
        "SELECT * FROM balances WHERE ? IS NULL OR account = ? ORDER BY account, contract", (account, account)
    )
    return [
        m.Credit(
            contract=r["contract"],
            account=r["account"],
            credited=r["credited"],
            withdrawn=r["withdrawn"],
            unpaid=str(int(r["credited"]) - int(r["withdrawn"])),
        )
        for r in rows
    ]


def list_auditors(db: sqlite3.Connection, *, address: str | None = None) -> list[m.Auditor]:
    rows = db.execute(
        "SELECT * FROM auditors WHERE ? IS NULL OR address = ? ORDER BY registered_block, address", (address, address)
    )
    return [_from_row(m.Auditor, r, exit_requested=r["exit_at"] is not None, exited=bool(r["exited"])) for r in rows]


# --- rows ----------------------------------------------------------------------------------------


def _task_row(db: sqlite3.Connection, task: int) -> Row | None:
    row: Row | None = db.execute(f"SELECT {TASK_COLUMNS} FROM {TASK_FROM} WHERE t.task = ?", (task,)).fetchone()
    return row


def _from_row(model: type[M], r: Row, **computed: Any) -> M:
    """One ``model`` from a row: each field from the column of its name, as :func:`_json_row` builds it in
    SQL; ``computed`` gives the fields that need Python."""
    return model(**{f: r[f] for f in model.model_fields if f not in computed}, **computed)


def _summary(r: Row) -> m.TaskSummary:
    return _from_row(m.TaskSummary, r)


def _batch(r: Row) -> m.Batch:
    return _from_row(m.Batch, r, sampled=json.loads(r["sampled"] or "[]"))


def _dispute(r: Row) -> m.DisputeSummary:
    return _from_row(m.DisputeSummary, r)


def _payout(r: Row) -> m.Payout:
    return _from_row(m.Payout, r)
