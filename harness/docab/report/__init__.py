"""The report: the summary of a run, its statistics, rendering, plots, the gate and pandas frames."""
