"""Course staff: a cohort graded into a gradebook, archives, the Gradescope autograder, learner bundles."""
