"""Running a config: launch (the library entry point), the dataset, the schedule of work units,
workspaces, progress, and the steps of one sample."""
