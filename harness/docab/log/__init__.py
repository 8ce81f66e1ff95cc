"""The run log: records, usage, transcripts, the run folder (manifest, records, transcripts) and
merging of shards."""
