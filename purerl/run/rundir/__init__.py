"""Run directories: the one package that names their paths and writes and reads their files.

| path | written by | content |
|---|---|---|
| ``config.json`` | ``write_config`` | ``ConfigRecord``: algo, config, run options, versions, time |
| ``metrics.jsonl`` | ``MetricsWriter`` | one JSON object per update (``report_rows``) |
| ``summary.json`` | ``write_summary`` | ``Summary``: the final record |
| ``returns.png``, ``returns_smoothed.png`` | ``purerl.run.plots`` | learning curves |
| ``resumes.jsonl`` | ``record_resume`` | one line per resume: from where, what changed |
| ``checkpoints/<step>/`` | ``purerl.run.checkpoint`` | orbax: arrays and a ``CheckpointRecord`` |
| ``checkpoints/<step>/checksums.json`` | ``seal_checkpoint`` | CRC-32 of every file orbax wrote |
| ``unreadable-checkpoints/`` | ``set_aside_checkpoint`` | checkpoints a resume could not read |
| ``tensorboard/`` | ``purerl.run.tensorboard`` in ``tensorboard_dir`` | event files |
| ``wandb/`` | wandb (``--wandb-project``) | its local files |
| ``.lock`` | ``RunLock`` | held by the process training into the directory |

Everything here reads runs that are still going too: ``summary.json`` absent and the last line
of ``metrics.jsonl`` possibly cut short by its writer. Nothing is written through a link inside
a run directory (``purerl.run.writes``): a resume checks every path above first
(``require_safe_paths``), and each write checks its own path again as it opens it.

| module | owns |
|---|---|
| ``layout`` | paths, creating and locking a run directory, setting checkpoints aside |
| ``records`` | ``config.json``, ``summary.json``, ``resumes.jsonl``, checkpoint records |
| ``checksums`` | each checkpoint's ``checksums.json`` |
| ``metrics`` | ``metrics.jsonl``, and a whole run read back (``load_run``) |
"""

from __future__ import annotations

from purerl.run.rundir.checksums import (
    CHECKSUM_BLOCK_BYTES,
    checkpoint_files,
    damaged_files,
    file_checksums,
    file_crc32,
    read_checksums,
    seal_checkpoint,
)
from purerl.run.rundir.layout import (
    CHECKPOINTS_DIR,
    CHECKSUM_ALGORITHM,
    CHECKSUMS_FILE,
    CONFIG_FILE,
    GRAPH_FILES,
    LOCK_FILE,
    METRICS_FILE,
    RESUMES_FILE,
    RUN_FILES,
    RUNS_ROOT,
    SUMMARY_FILE,
    SUPERSEDED_DIR,
    TENSORBOARD_DIR,
    UNREADABLE_DIR,
    WANDB_DIR,
    DamagedFileError,
    NotARunError,
    RunLock,
    RunLockedError,
    checkpoint_path,
    checkpoints_dir,
    complete_checkpoints,
    create_run_dir,
    default_run_dir,
    graph_paths,
    has_metrics_rows,
    missing_dirs,
    remove_empty_dirs,
    remove_new_run,
    require_safe_paths,
    saving_checkpoint_path,
    set_aside_checkpoint,
    tensorboard_dir,
    writable_checkpoints_dir,
    writable_tensorboard_dir,
)
from purerl.run.rundir.metrics import (
    EVAL_LENGTH,
    EVAL_RETURN,
    Evaluations,
    MetricsRepair,
    MetricsWriter,
    Run,
    evaluations_of_rows,
    json_number,
    load_run,
    per_seed_column,
    read_evaluations,
    read_metrics_rows,
    report_rows,
    restore_metrics,
    run_from_rows,
)
from purerl.run.rundir.records import (
    RECORD_TYPES,
    CheckpointRecord,
    ConfigRecord,
    JsonType,
    RunIdentity,
    Summary,
    fields_json,
    from_json,
    is_int,
    is_list_of,
    is_placement,
    json_kind,
    json_ready,
    read_config,
    read_json,
    read_summary,
    read_text,
    record_problem,
    record_resume,
    run_identity,
    write_config,
    write_json,
    write_summary,
)

__all__ = [
    "CHECKPOINTS_DIR",
    "CHECKSUMS_FILE",
    "CHECKSUM_ALGORITHM",
    "CHECKSUM_BLOCK_BYTES",
    "CONFIG_FILE",
    "CheckpointRecord",
    "ConfigRecord",
    "DamagedFileError",
    "EVAL_LENGTH",
    "EVAL_RETURN",
    "Evaluations",
    "GRAPH_FILES",
    "JsonType",
    "LOCK_FILE",
    "METRICS_FILE",
    "MetricsRepair",
    "MetricsWriter",
    "NotARunError",
    "RECORD_TYPES",
    "RESUMES_FILE",
    "RUNS_ROOT",
    "RUN_FILES",
    "Run",
    "RunIdentity",
    "RunLock",
    "RunLockedError",
    "SUMMARY_FILE",
    "SUPERSEDED_DIR",
    "Summary",
    "TENSORBOARD_DIR",
    "UNREADABLE_DIR",
    "WANDB_DIR",
    "checkpoint_files",
    "checkpoint_path",
    "checkpoints_dir",
    "complete_checkpoints",
    "create_run_dir",
    "damaged_files",
    "default_run_dir",
    "evaluations_of_rows",
    "fields_json",
    "file_checksums",
    "file_crc32",
    "from_json",
    "graph_paths",
    "has_metrics_rows",
    "is_int",
    "is_list_of",
    "is_placement",
    "json_kind",
    "json_number",
    "json_ready",
    "load_run",
    "missing_dirs",
    "per_seed_column",
    "read_checksums",
    "read_config",
    "read_evaluations",
    "read_json",
    "read_metrics_rows",
    "read_summary",
    "read_text",
    "record_problem",
    "record_resume",
    "remove_empty_dirs",
    "remove_new_run",
    "report_rows",
    "require_safe_paths",
    "restore_metrics",
    "run_from_rows",
    "run_identity",
    "saving_checkpoint_path",
    "seal_checkpoint",
    "set_aside_checkpoint",
    "tensorboard_dir",
    "writable_checkpoints_dir",
    "writable_tensorboard_dir",
    "write_config",
    "write_json",
    "write_summary",
]
