// Reports: see the module's files.
