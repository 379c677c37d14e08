// Simulator: see the module's files.
