// EventModel: see the module's files.
