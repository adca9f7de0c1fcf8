"""Self-checks of the tool that are not tests, run by hand and reported in notes: gpu_check,
honest_numbers, triton_targets, trace_speed, fault_campaign, and the docs generator."""
