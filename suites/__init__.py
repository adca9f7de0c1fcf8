"""How things are measured and reported: the suite table and the typed run spec (the config
layer), the results schema, and the engine: harness, profiling, findings, reports."""
