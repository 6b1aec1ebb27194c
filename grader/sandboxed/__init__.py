"""What runs inside the sandbox, beside learner code: the worker, a rank, observers. It decides nothing."""
