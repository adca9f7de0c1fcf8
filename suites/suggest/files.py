"""The names of the files `analyze --suggest` writes into its folder: command.py writes them,
audit.py reads them (and tells a suggest folder by its table)."""

TABLE = "suggest.csv"          # only --suggest writes it: audit.looks_like reads it so
ROUNDS = "replay_rounds.csv"   # every share of every replay round, with its state and figure
