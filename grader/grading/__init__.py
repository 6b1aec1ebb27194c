"""One file graded case by case into a report: the worker client, the case judge, comparison, rules, diagnosis."""
