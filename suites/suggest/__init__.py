"""`--suggest`'s room, above the harness: a model's trace (its groups read by
suites/traces/suggest/) to a sweep at its shapes, each group replayed alone and timed by the
harness (replay.py), judged once (verdict.py), printed (page.py) and written (command.py); and
the audit of the folder it writes (audit.py)."""
