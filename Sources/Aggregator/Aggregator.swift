// Aggregator: see the module's files.
