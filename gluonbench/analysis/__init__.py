"""Statistics, verdicts and rules over measured runs."""
