"""MMLongBench-Doc and web-extraction benchmarks: loading, corpus conversion, scoring, the built-in suite."""
