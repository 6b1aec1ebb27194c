"""A course's roster, read from roster.csv or a Gradescope export's submission_metadata.yml, with the per-learner
settings of adjustments.csv beside it; every problem one line naming the file and the line."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from grader.errors import UsageError
from grader.files import RefusedFile, read_regular
from grader.inert import one_line
from grader.results.learners import Learner, parse_time

COLUMNS = ("id", "name", "email", "submission")
ADJUSTMENTS = ("extra_time", "late_days", "override", "override_reason", "override_reason_shown", "submitted_at")
YES, NO = ("yes", "true", "1"), ("no", "false", "0", "")  # override_reason_shown's values, in any case
PASSED_ON = ("canvas_id", "sis_login_id", "section")  # kept for the exports, never interpreted
ADJUSTMENTS_FILE = "adjustments.csv"
GRADESCOPE_METADATA = "submission_metadata.yml"
ROSTER_LIMIT = 16 << 20  # a roster of many thousand learners fits well under it


class RosterError(UsageError):
    """A roster (or its adjustments) that cannot be used as it is: one line naming the file and the line."""


def read_roster(path: Path) -> list[Learner]:
    """The learners of `path`: a roster CSV, a Gradescope export's metadata, or the export's folder holding it;
    then the adjustments of an adjustments.csv beside it, if there is one."""
    if path.is_dir():
        path = path / GRADESCOPE_METADATA
    text = _read_text(path)
    learners = _gradescope(path, text) if path.suffix.lower() in (".yml", ".yaml") else _roster_csv(path, text)
    beside = path.parent / ADJUSTMENTS_FILE
    if os.path.lexists(beside) and beside != path:
        learners = _adjusted(learners, beside, _read_text(beside))
    return learners


def _read_text(path: Path) -> str:
    try:
        data = read_regular(path, ROSTER_LIMIT)
    except RefusedFile as error:
        raise RosterError(f"{path}: {error.reason}") from None
    except OSError as error:
        raise RosterError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        return data.decode("utf-8-sig")  # a spreadsheet's byte-order mark is fine
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise RosterError(f"{path}:{line}: not UTF-8 (byte 0x{data[error.start]:02x}): save it as UTF-8 CSV") from None


def _records(path: Path, text: str, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """Each data row with the line it starts on, once the header has every required column."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip().lower() for name in next(reader, [])]
        missing = [name for name in required if name not in header]
        if missing:
            raise RosterError(f"{path}:1: no column {', '.join(missing)} (it has {', '.join(header) or 'none'}); "
                              f"the first line names the columns: {','.join(required)}")
        found, start = [], reader.line_num + 1
        for cells in reader:
            if any(cell.strip() for cell in cells):
                if len(cells) > len(header):
                    raise RosterError(f"{path}:{start}: {len(cells)} cells, but the header names {len(header)}")
                found.append((start, {name: value.strip() for name, value in zip(header, cells)}))
            start = reader.line_num + 1
    except csv.Error as error:
        raise RosterError(f"{path}:{reader.line_num}: not a well-formed CSV line ({error})") from None
    return found


def _roster_csv(path: Path, text: str) -> list[Learner]:
    learners: list[Learner] = []
    seen: dict[str, int] = {}
    for line, record in _records(path, text, COLUMNS):
        where = f"{path}:{line}"
        learner_id = record["id"]
        if not learner_id:
            raise RosterError(f"{where}: no id")
        if learner_id in seen:
            raise RosterError(f"{where}: id {one_line(learner_id)} is also on line {seen[learner_id]}")
        seen[learner_id] = line
        learners.append(Learner(learner_id, record["name"], record["email"], _submission(record["submission"], where),
                                where, **_settings(record, where), fields=_passed_on(record)))
    return learners


def _submission(text: str, where: str) -> str:
    """An entry of the submissions' folder, named from it ('alice.py', 'bob', 'section-2/carol.py')."""
    if not text:
        return ""
    parts = PurePosixPath(text.replace("\\", "/")).parts
    if PurePosixPath(text).is_absolute() or ".." in parts or text.startswith("~"):
        raise RosterError(f"{where}: submission {one_line(text)!r} must be a name inside the submissions' folder")
    return "/".join(part for part in parts if part != ".")


def _settings(record: dict[str, str], where: str) -> dict[str, Any]:
    """The adjustments a row sets (extra time, late days, an override with its reason, the time handed in)."""
    settings: dict[str, Any] = {}
    try:
        if record.get("extra_time"):
            text = record["extra_time"].lower().removesuffix("x").strip()
            settings["extra_time"] = float(text[:-1]) / 100 if text.endswith("%") else float(text)
            if not 1 <= settings["extra_time"] <= 100:
                raise ValueError(f"extra_time {record['extra_time']!r} is a factor of at least 1, such as 1.5")
        if record.get("late_days"):
            settings["late_days"] = int(record["late_days"])
            if settings["late_days"] < 0:
                raise ValueError(f"late_days {record['late_days']!r} must be a whole number of days, 0 or more")
        if record.get("override"):
            settings["override"] = float(record["override"])
            if not record.get("override_reason"):
                raise ValueError("an override needs an override_reason: it is shown beside the score")
            settings["override_reason"] = record["override_reason"]
        shown = record.get("override_reason_shown", "").lower()
        if shown not in YES + NO:
            raise ValueError(f"override_reason_shown {record['override_reason_shown']!r} must be yes or no (empty: no)")
        if shown in YES and "override" not in settings:
            raise ValueError("override_reason_shown says to show an override's reason, but the row has no override")
        if shown:
            settings["override_shown"] = shown in YES
        if record.get("submitted_at"):
            settings["submitted_at"] = parse_time(record["submitted_at"])
    except ValueError as error:
        text = str(error)
        if text.startswith(("could not convert", "invalid literal")):
            text = f"{text.split(':', 1)[-1].strip()} is not a number"
        raise RosterError(f"{where}: {one_line(text)}") from None
    return settings


def _passed_on(record: dict[str, str]) -> dict[str, str]:
    return {name: record[name] for name in PASSED_ON if record.get(name)}


def _adjusted(learners: list[Learner], path: Path, text: str) -> list[Learner]:
    """The learners with adjustments.csv's settings over the roster's, each row naming a learner by id."""
    from dataclasses import replace

    by_id = {learner.id: learner for learner in learners}
    seen: dict[str, int] = {}
    for line, record in _records(path, text, ("id",)):
        where = f"{path}:{line}"
        if record["id"] not in by_id:
            raise RosterError(f"{where}: id {one_line(record['id'])} is not in the roster")
        if record["id"] in seen:
            raise RosterError(f"{where}: id {one_line(record['id'])} is also on line {seen[record['id']]}")
        seen[record["id"]] = line
        by_id[record["id"]] = replace(by_id[record["id"]], **_settings(record, where))
    return [by_id[learner.id] for learner in learners]


class _Metadata(yaml.SafeLoader):
    """Gradescope's metadata is written by Ruby: a tag such as !ruby/object:BigDecimal is read as plain data."""


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_Metadata.add_multi_constructor("!", _untagged)


def _gradescope(path: Path, text: str) -> list[Learner]:
    """One learner per submitter of each submission folder (a group's members share theirs)."""
    loader = _Metadata(text)
    try:
        root = loader.get_single_node()
        if not isinstance(root, yaml.MappingNode):
            raise RosterError(f"{path}:1: not Gradescope's submission metadata (a submission folder per key)")
        learners: list[Learner] = []
        seen: dict[str, str] = {}
        for key, value in root.value:
            where = f"{path}:{key.start_mark.line + 1}"
            folder, about = loader.construct_object(key, deep=True), loader.construct_object(value, deep=True)
            submitters = about.get(":submitters") if isinstance(about, dict) else None
            if not isinstance(folder, str) or not isinstance(submitters, list) or not submitters:
                raise RosterError(f"{where}: expected a submission folder with its :submitters:")
            handed_in = _time(about.get(":created_at"), where)
            for person in submitters:
                learner = _submitter(person, folder, handed_in, where)
                if learner.id in seen:
                    raise RosterError(f"{where}: {one_line(learner.id)} is also a submitter of {seen[learner.id]}")
                seen[learner.id] = folder
                learners.append(learner)
        return learners
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise RosterError(f"{path}:{line}: not valid YAML ({one_line(getattr(error, 'problem', '') or error)})") \
            from None
    finally:
        loader.dispose()


def _submitter(person: Any, folder: str, handed_in: Any, where: str) -> Learner:
    if not isinstance(person, dict):
        raise RosterError(f"{where}: a submitter without :name:, :sid: and :email:")
    sid, email = str(person.get(":sid") or "").strip(), str(person.get(":email") or "").strip()
    if not sid and not email:
        raise RosterError(f"{where}: a submitter with neither :sid: nor :email:")
    return Learner(sid or email, str(person.get(":name") or ""), email, _submission(folder, where), where,
                   submitted_at=handed_in, fields={"sid": sid})


def _time(value: Any, where: str) -> Any:
    from datetime import datetime

    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.astimezone()
    try:
        return parse_time(str(value))
    except ValueError as error:
        raise RosterError(f"{where}: :created_at: {error}") from None


def check_submissions(learners: list[Learner], root: Path) -> None:
    """Every submission the roster names is in the submissions' folder (handed in, found as named)."""
    for learner in learners:
        if learner.submission and not os.path.lexists(root / learner.submission):
            raise RosterError(f"{learner.where}: {one_line(learner.submission)} is not in {root}")
