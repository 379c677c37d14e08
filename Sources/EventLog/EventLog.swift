// EventLog: see the module's files.
