"""The results schema: every column of measurements.csv once (name, unit, type, meaning), the
Status of a row, the typed row the runner fills, the writers of the run tables, and the one
reader of run folders (reader.py), which brings an older folder up to this schema (upgrade.py)."""
