"""The ladder report across blocks (python -m suites.collect): run folders merged into one
table per block at its reference shape, plus per-suite overhead fits, rooflines and compile
break-even. loading -> table / fits / breakeven -> plots -> report."""
