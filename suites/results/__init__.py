"""The results schema: every column of measurements.csv once (name, unit, type, meaning), the
Status of a row, the typed row the runner fills, and the readers and writers of the run tables."""
