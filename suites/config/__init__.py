"""Composing and checking a run's configuration: the suite table, shapes, the typed run spec
built from the composed config, the checks made before Hydra starts, and the Hydra side of a
sweep."""
