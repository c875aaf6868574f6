"""The SQLite store of a run directory: the plan (units), the requests, the calls' outcomes and
their scores. It is the cache and the resume point: a call whose outcome is stored `ok` is never
made again; an `error` outcome is recorded (and counted) but retried by the next run.

How it works. `schema` holds the tables and the migrations that bring every store file ever written
up to them (a writer migrates in place, a reader in a memory copy). `Store` (handle) opens one
connection, for writing (WAL, one writer: `writer`, each batch one transaction, so a run killed at
any point leaves only whole rows) or with `Store.read_only` (immutable=1 or mode=ro), and mixes
in the typed readers, one module per job: `runs` (a run's record, whether it is settled, where
its units stand), `calls` (by request key: resuming, scorers, an agent's turns), `batches` (a run's provider batches, recorded
before they are sent), `usage` (what was
spent and how replies were read), `joins` (units x calls x scores for the results frame, exports,
audit, review and the analyses) and `evidence` (one unit's whole record, for the viewer). A unit's
identity is one type, `UnitRow`; `UnitResult` and `UnitRecord` extend it with what was joined.
The status words and the numbers the joins read them as are named enums (`codes`). Every SQL
statement over a run's tables is in this package; the viewer's own index lives in the viewer and
works on the read-only connection a store hands out (`Store.reading_connection`).

A unit is one planned answer: (model, unit id) -> request key, with its item, probe, condition,
setting (a named mitigation, `none` without one) and scoring. `units.run` is the last run that
planned the unit: a run's results describe the units it planned, not every unit ever stored. A
setting that makes a call before a unit's answer (a monitor's note) links the unit to that call in
`unit_calls` (model, unit id) -> (key, role), written with the plan; the call itself is an
ordinary row of `calls`. A store that cannot be opened or written raises StoreWriteError, one
line naming the cause and the path; what was committed before stays.

May import: runtime."""

from .base import StoreWriteError
from .batches import BatchRecord
from .codes import ANSWERED, CallCode, CallStatus, ScoreCode, ScoreStatus
from .evidence import UnitDetail
from .handle import Store
from .joins import SMALL
from .rows import CallRow, RunConfig, ScoreRow, UnitRecord, UnitResult, UnitRow
from .schema import SCHEMA
from .usage import ModelUsage, ReadingCounts, SettingCost

__all__ = [
    "ANSWERED",
    "SCHEMA",
    "SMALL",
    "BatchRecord",
    "CallCode",
    "CallRow",
    "CallStatus",
    "ModelUsage",
    "ReadingCounts",
    "RunConfig",
    "ScoreCode",
    "ScoreRow",
    "ScoreStatus",
    "SettingCost",
    "Store",
    "StoreWriteError",
    "UnitDetail",
    "UnitRecord",
    "UnitResult",
    "UnitRow",
]
