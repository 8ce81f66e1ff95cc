"""The A/B agent harness: models, tools, arms, runner, records and the statistical report."""
