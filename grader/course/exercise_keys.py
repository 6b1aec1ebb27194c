"""The keys of the course file (exercises/course.yaml) and of exercise.yaml, declared for the parser and the reference.

grader/course/exercise.py refuses an exercise.yaml key that EXERCISE lacks and reads each default from it; the
sections with a parser of their own declare theirs beside it: `rules` (grader/course/rules/settings.py), `scale`
(grader/course/scale_spec.py) and `promises` (grader/course/promises.py).
"""

from __future__ import annotations

from grader.course.yamlfile import Key, KeyTable

HAND_IN_DEFAULT = "hand it in as your course asks"
PATH = "path (from the exercise's folder, or absolute)"

COURSE = KeyTable("exercises/course.yaml", (
    Key("course", "string", "the course's title: a learner bundle's README and course file carry it", None),
    Key("exercises", "list of folders (from the course's root), or mappings",
        "the exercises in the order learners meet them; a mapping names `name` (its folder is then exercises/NAME) "
        "or `directory`, and may set any exercise.yaml key, which replaces the folder's"),
    Key("hand_in", "string", "how a learner bundle's `grader submit` says to hand in the archive it writes "
        "(`grader export learner --hand-in`)", HAND_IN_DEFAULT),
))

EXERCISE = KeyTable("exercises/EX/exercise.yaml", (
    Key("name", "string", "the exercise's name, as every command takes it (or a unique prefix of it, such as 07)",
        None, "the folder's name"),
    Key("title", "string", "what `grader list` and `grader show` call it", None, "the name"),
    Key("stub", "file name", "the learner's file, in the exercise's folder"),
    Key("starter", PATH, "the stub's pristine copy, which `grader reset` puts back", None, "starter/STUB"),
    Key("statement", PATH, "the statement `grader show` prints", None, "README.md"),
    Key("checker", PATH, "the file defining the exercise's one `Checker` subclass (grader.api)", None, "checker.py"),
    Key("examples", PATH, "the visible examples' case file", None, "cases/examples.yaml"),
    Key("hidden", PATH, "the hidden suite: a folder of case files (read in name order), or one file", None,
        "cases/hidden"),
    Key("solution", PATH, "the reference solution", None, "solutions/EX/STUB (from the course's root)"),
    Key("mistakes", PATH, "the folder of catalogued mistakes, one file each", None, "solutions/EX/mistakes"),
    Key("variants", PATH, "the folder of correct variants, each a whole solution", None, "solutions/EX/variants"),
    Key("hints", PATH, "the folder of staged hints (`*.md`, opened in file-name order)", None, "hints/EX"),
    Key("time_limit", "number (CPU seconds, above 0)", "each case's CPU time, unless the case sets its own", 10.0),
    Key("time_budget", "number (seconds, above 0)", "the whole command's CPU time; cases left when it is spent are "
        "not run (`--time-budget`)", 300.0),
    Key("memory_limit_mb", "whole number (MiB, above 0)", "the memory of all the learner's processes together",
        4096),
    Key("max_score", "number (above 0)", "what all the cases add up to, each scaled by its `points`", None,
        "one point per case"),
    Key("rules", "mapping (exercise.yaml: rules)", "what the learner's call may not do, judged on every case", None,
        "every rule's default"),
    Key("distributed", "mapping (exercise.yaml: distributed)", "how every submission runs the checker's "
        "distributed suite", None, "none: run only when asked (`--ranks N`)"),
    Key("scale", "mapping (exercise.yaml: scale)", "what `grader scale` measures", None,
        "none: `grader scale` has nothing to measure"),
    Key("promises", "mapping (exercise.yaml: promises)", "the ranges of values the statement promises, which "
        "`grader validate` holds the cases to", None, "none"),
    Key("precomputed", PATH, "a learner bundle's examples, stored whole (written by `grader export learner`): no "
        "checker, case file or reference is read", None),
    Key("directory", PATH, "the exercise's folder, where a course file's mapping entry names it", None,
        "exercises/NAME"),
))

DISTRIBUTED = KeyTable("exercise.yaml: distributed", (
    Key("ranks", "whole number (2 or more)", "the ranks a plain `grader submit`, `grader grade` and the autograder "
        "run the suite with", 2),
    Key("counts", "true or false", "whether the suite's cases count toward the score (false: shown, worth nothing)",
        True),
))
