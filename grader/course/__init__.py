"""The course as files: exercises, cases, the checker interface, mistakes, and what is trusted."""
