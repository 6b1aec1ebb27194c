"""The learner's workspace in .grader/ and the tools around grading: state, history, repro, watch."""
