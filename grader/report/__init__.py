"""Every view of results: terminal, summary, progress bar, statements, results JSON, validation, cohort pages."""
