"""Self-checks of the tool that are not tests, run by hand and reported in notes: gpu_check,
honest_numbers, triton_targets (with its parts: triton_launches, which launches it compiles, and
triton_specialisation, how Triton's runtime specialises them), trace_speed, fault_campaign, and
the docs generator."""
